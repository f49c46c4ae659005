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
        description = "List processes, runtime state, cgroups, mounts, snapshot trees and directories left by sandboxes (containers, gVisor and microVM"
                + " guests: QEMU processes and their state). Run it when no engine is running.")
final class LeaksCommand implements Callable<Integer> {

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @picocli.CommandLine.Option(names = "--data-dir", paramLabel = "DIR",
            description = "The server's data directory, whose snapshot trees are checked (env AIRLOCK_DATA_DIR; default /var/lib/airlock).")
    java.nio.file.Path dataDir = AuditCommand.defaultDataDir();

    @Override
    public Integer call() {
        List<String> leaks = new ArrayList<>(new LeakCheck(engineOptions.hostCheckConfig()).findAll());
        // The state root itself, not the driver's settings: those refuse a root too long for the sockets a
        // microVM would need, and a host that never ran one must still be checked for the rest.
        leaks.addAll(MicroVmLeakCheck.findAll(engineOptions.microVmStateRoot()));
        leaks.addAll(snapshotTrees(dataDir.resolve("snapshots").resolve("trees")));
        if (leaks.isEmpty()) {
            System.out.println("no leaks: no sandbox process, QEMU guest, runtime state, cgroup, mount or directory remains");
            return 0;
        }
        System.out.println(leaks.size() + " leftover(s):");
        leaks.forEach(l -> System.out.println("  " + l));
        return 1;
    }

    /**
     * Snapshot trees a server left (each restored sandbox's /workspace lies on one while it lives;
     * the server removes each with its last sandbox, and all of them when it starts).
     */
    static List<String> snapshotTrees(java.nio.file.Path trees) {
        List<String> found = new ArrayList<>();
        if (!java.nio.file.Files.isDirectory(trees)) {
            return found;
        }
        try (var dirs = java.nio.file.Files.list(trees)) {
            dirs.forEach(d -> found.add("snapshot tree: " + d));
        } catch (java.io.IOException e) {
            found.add("cannot list " + trees + ": " + e.getMessage());
        }
        return found;
    }
}
