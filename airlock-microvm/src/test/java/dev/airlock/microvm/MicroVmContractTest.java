package dev.airlock.microvm;

import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Limits;
import dev.airlock.core.contract.DriverContract;
import dev.airlock.core.contract.SandboxKernel;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The driver contract, every concern of it, on the microVM driver. Not yet part of the default
 * test run (the module's pom excludes it): the driver does not yet pass every concern, and each
 * case boots a guest under software emulation (the whole run took 36 minutes on a loaded two-core
 * host). Run one concern at a time by its tag:
 * <pre>
 * mvn -B -o -pl airlock-microvm -am test -Dtest=MicroVmContractTest -Dgroups=SyscallFilter -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 * (or, equally, {@code -Dtest='MicroVmContractTest,DriverContract$SyscallFilter#*'}: the concerns
 * are nested classes of {@link DriverContract}). The guest's kernel is {@link SandboxKernel#GUEST}.
 *
 * <p>Where it stands (TCG, a two-core host at a load average of 7 to 11), after the guest init
 * gained the shared seccomp filter, a memory and pids cgroup, a minimal /dev and runc's /proc masks
 * (first on the pc machine, then again on main's microvm machine where marked "merged"):
 * <ul>
 * <li>EngineLifecycle: all 21 pass (before these changes; not run again).
 * <li>SyscallFilter: all 68 pass (merged too). Privilege: all 9 pass (merged too). NetworkIsolation: all 44 pass
 *     (the denied socket families included). ProcessIsolation: all 12 pass. EgressBridge: all 4 pass
 *     (merged: its port is a node of its own, /.airlock/egress-port).
 * <li>ResourceLimits: 15 of 16 pass merged (14 on pc): the memory bomb is OOM-killed in the guest's
 *     cgroup, tmpfs is charged to it, the fork bombs stop at pids.max. timeoutCannotBeDodgedByIgnoringSignals
 *     fails (and, on pc, cpuSpinPastTimeout...): python does not print its first line within the
 *     one-second timeout under TCG on a loaded host.
 * <li>FilesystemIsolation, merged: 32 of 48 passed in a whole run (/dev, /run/airlock, the masked
 *     /proc files and directories, /sys, /proc/sys among them). Failed: hostFileIsNotVisibleInTheSandbox
 *     (8: its walks of the 9p /usr time out under TCG), sandboxCannotSeeHostRootOrHomeDirectories (the
 *     kernel's own /root, EACCES rather than ENOENT) and existingImageFilesCannotBeModified (7: EROFS
 *     rather than EACCES, the initramfs root being read-only as a file system). Since /root is removed,
 *     / is read-only as a mount and the contract asserts the GUEST outcome of truncate (Linux 6.1 checks
 *     the read-only mount first), those 8 pass: 23 of 23 in a run of sandboxCannotSee*, existingImage*,
 *     creatingFiles*, airlockState* and dev*. Only hostFileIsNotVisibleInTheSandbox (8) is left.
 * <li>InputsIsolation (10 of 10): refused, "not yet supported by the microvm driver".
 * <li>HostInformation (13 of 15 in the first run, not run again): the guest's /proc is its own
 *     kernel's (its cmdline, interrupts, meminfo of guest RAM), not the views the contract wants.
 * <li>CrossSandbox: not run again since the loopback fix (1 of 6 failed in the first run, on it).
 * </ul>
 *
 * <p>The first run (250 cases, 122 failed), before the loopback, bounding-set, /sys, /proc/acpi
 * and mount-level read-only fixes of the guest init that it prompted, and before the changes above,
 * failed in SyscallFilter (39), NetworkIsolation (24 denied families), Privilege (2), HostInformation
 * (13), FilesystemIsolation (/dev, /run/airlock, 8 masked /proc files), ResourceLimits (3),
 * ProcessIsolation (2), CrossSandbox (1), EgressBridge (3), InputsIsolation (10).
 */
class MicroVmContractTest extends DriverContract {

    private static final MicroVmDriverConfig CONFIG = MicroVmDriverConfig.defaults();

    @Override
    protected IsolationDriver newDriver() {
        return new MicroVmDriver(CONFIG);
    }

    /** QEMU processes and guest directories of those sandboxes, and the directories of instances whose every guest is gone. */
    @Override
    protected List<String> leftovers(String sandboxIdPrefix) {
        List<String> left = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 5_000;
        do {
            left.clear();
            ProcessHandle.allProcesses()
                    .filter(p -> p.info().command().map(c -> c.endsWith("/" + Qemu.BINARY)).orElse(false))
                    .filter(p -> p.info().arguments().map(a -> String.join(" ", a).contains("/sandboxes/" + sandboxIdPrefix)).orElse(false))
                    .forEach(p -> left.add("QEMU process " + p.pid()));
            try (DirectoryStream<Path> engines = Files.newDirectoryStream(CONFIG.stateRoot().resolve("engines"))) {
                for (Path engine : engines) {
                    try (DirectoryStream<Path> guests = Files.newDirectoryStream(engine.resolve("sandboxes"), sandboxIdPrefix + "*")) {
                        guests.forEach(g -> left.add("guest directory " + g));
                    } catch (IOException e) {
                        // an instance closing while we look: its directory is gone
                    }
                }
            } catch (IOException e) {
                left.add("cannot list " + CONFIG.stateRoot() + ": " + e.getMessage());
            }
        } while (!left.isEmpty() && System.currentTimeMillis() < deadline && sleep());
        return left;
    }

    private static boolean sleep() {
        try {
            Thread.sleep(100);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    protected Path hostStateDirectory() {
        return CONFIG.stateRoot();
    }

    /** A guest's own kernel serves the code's system calls: its processes are the guest's, its /proc the guest kernel's. */
    @Override
    protected SandboxKernel kernel() {
        return SandboxKernel.GUEST;
    }

    /** No process of a guest is a host process, so no host uid is the sandbox's (QEMU's own uid is the VMM's, not the code's). */
    @Override
    protected boolean isSandboxHostUid(long hostUid, int sandboxUid) {
        return false;
    }

    /**
     * Under software emulation (TCG) python takes seconds to start in a guest on a busy two-core host:
     * the cases whose timeouts are about a kill, not speed, give it five times as long. Under KVM a
     * guest runs code as fast as a container.
     */
    @Override
    protected int timeScale() {
        return CONFIG.accelerator().equals(MicroVmDriverConfig.KVM) ? 1 : 5;
    }

    /** The guest init starts the agent with the limits and its virtio-serial port (a node of its own outside /dev). */
    @Override
    protected String agentCommandLine(Limits limits) {
        return "/.airlock/airlock-agent\0--nofile\0" + limits.openFiles() + "\0--fsize\0" + limits.fileSizeBytes() + "\0/.airlock/port\0";
    }
}
