package dev.airlock.cli;

import dev.airlock.microvm.MicroVmLeakCheck;
import dev.airlock.oci.LeakCheck;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

/** {@code airlock leaks}: lists whatever sandboxes left on this host; exits 1 if anything. */
@Command(name = "leaks", mixinStandardHelpOptions = true,
        description = "List processes, runtime state, cgroups, mounts and directories left by sandboxes (containers, gVisor and microVM"
                + " guests: QEMU processes and their state). Run it when no engine is running.")
final class LeaksCommand implements Callable<Integer> {

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Override
    public Integer call() {
        List<String> leaks = new ArrayList<>(new LeakCheck(engineOptions.hostCheckConfig()).findAll());
        leaks.addAll(MicroVmLeakCheck.findAll(engineOptions.microVmConfig().stateRoot()));
        if (leaks.isEmpty()) {
            System.out.println("no leaks: no sandbox process, QEMU guest, runtime state, cgroup, mount or directory remains");
            return 0;
        }
        System.out.println(leaks.size() + " leftover(s):");
        leaks.forEach(l -> System.out.println("  " + l));
        return 1;
    }
}
