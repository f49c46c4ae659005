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
 * host). Run it with {@code -Dtest='MicroVmContractTest*'}.
 *
 * <p>Its first run (250 cases, 122 failed), before the loopback, bounding-set, /sys, /proc/acpi
 * and mount-level read-only fixes of the guest init that it prompted:
 * <ul>
 * <li>EngineLifecycle: all 21 pass.
 * <li>EgressBridge (3 of 4), InputsIsolation (10 of 10): refused, "not yet supported by the microvm driver".
 * <li>SyscallFilter (39 of 68), NetworkIsolation's denied socket families (24), Privilege's seccomp
 *     status and process_vm_readv: the guest applies no seccomp filter yet.
 * <li>HostInformation (13 of 15), FilesystemIsolation's masked /proc files (8): the guest's /proc is
 *     its own kernel's (its cmdline, interrupts, meminfo of guest RAM), not the views the contract wants.
 * <li>FilesystemIsolation's /dev (devtmpfs, not a minimal /dev), /run/airlock's owner and mode, and
 *     hostFileIsNotVisibleInTheSandbox (its walks of the 9p /usr time out under TCG; one boot panicked
 *     in setup_IO_APIC, since cured with no_timer_check).
 * <li>ResourceLimits (3 of 16): a memory bomb thrashes the guest instead of being OOM-killed (no memory
 *     cgroup in the guest), tmpfs is bounded by its size rather than by the memory limit, and python
 *     does not start within a one-second timeout under TCG.
 * <li>ProcessIsolation (2 of 9): they look for the sandbox's processes on the host, where a guest's
 *     never are; the contract knows this for gVisor only ({@code SandboxKernel}).
 * <li>CrossSandbox (1 of 6) and NetworkIsolation's loopback and IPv6 cases: the loopback was down (fixed).
 * </ul>
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

    /** The guest init starts the agent with the limits and its virtio-serial port (a node of its own outside /dev). */
    @Override
    protected String agentCommandLine(Limits limits) {
        return "/.airlock/airlock-agent\0--nofile\0" + limits.openFiles() + "\0--fsize\0" + limits.fileSizeBytes() + "\0/.airlock/port\0";
    }
}
