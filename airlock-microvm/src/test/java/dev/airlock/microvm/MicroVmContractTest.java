package dev.airlock.microvm;

import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Limits;
import dev.airlock.core.contract.DriverContract;
import dev.airlock.core.contract.SandboxKernel;
import org.junit.jupiter.api.Tag;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The driver contract, every concern of it, on the microVM driver. Each case boots a guest under
 * software emulation (TCG) on this host, so the whole run is long; run one concern at a time by its tag:
 * <pre>
 * mvn -B -o -pl airlock-microvm -am test -Dtest=MicroVmContractTest -Dgroups=SyscallFilter -Dsurefire.failIfNoSpecifiedTests=false
 * </pre>
 * (or, equally, {@code -Dtest='MicroVmContractTest,DriverContract$SyscallFilter#*'}: the concerns
 * are nested classes of {@link DriverContract}). The guest's kernel is {@link SandboxKernel#GUEST};
 * under TCG its code runs about five times slower than a container's ({@link #timeScale()}).
 *
 * <p>Where it stands (TCG, a two-core host shared with other test runs, load average 5 to 7; the
 * time is surefire's for the concern, boots included):
 * <ul>
 * <li>HostInformation: 15 of 15, 252 s. The guest's /proc is its own kernel's; the contract asserts
 *     that what it shows is the guest's (command line, boot id, key owners, one vCPU, no disk, RAM of
 *     the limit plus the guest kernel's share), never the host's.
 * <li>ResourceLimits: 16 of 16, 141 s (its kill-timeout cases scaled by {@link #timeScale()}).
 * <li>InputsIsolation: 10 of 10, 190 s (nothingBesideTheInputIsReachable, a walk of the whole tree
 *     through 9p, alone 138 s). Inputs are bound into QEMU's jail and exported read-only over 9p.
 * <li>EngineLifecycle: 21 of 21, 100 s. CrossSandbox: 6 of 6, 128 s.
 * <li>FilesystemIsolation: 41 of 41, 299 s. hostFileIsNotVisibleInTheSandbox places all its markers at once
 *     and walks the tree once (109 s alone, with the 9p msize at 64 KiB; it timed out at 512 KiB).
 * <li>NetworkIsolation: 44 of 44, 171 s.
 * <li>SyscallFilter: 68 of 68, 241 s. Privilege: 9 of 9, 35 s. ProcessIsolation: 12 of 12, 48 s.
 *     EgressBridge: 4 of 4, 14 s. Pause: 3 of 3, 13 s. Terminal: 4 of 4, 17 s (these six at a load
 *     average below 2).
 * </ul>
 * All 13 concerns, 253 cases: about 1,650 s (27 minutes) of surefire time as measured here, one
 * concern after another; the driver's own tests (MicroVmDriverTest, MicroVmEgressTrustTest) boot a
 * few guests more.
 *
 * <p>The first run (250 cases, 122 failed) prompted the guest init's loopback, bounding-set, /sys,
 * /proc/acpi and mount-level read-only fixes, its seccomp filter, memory and pids cgroup, minimal
 * /dev and runc's /proc masks.
 *
 * <p>A tier's contract: {@code bin/test} runs the cases tagged {@code smoke} (about one per concern),
 * {@code bin/test --full} all of them (CONTRIBUTING.md).
 */
@Tag("tier-contract")
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

    /** Under software emulation the cases whose timeouts are about a kill, not speed, give code five times as long. */
    @Override
    protected int timeScale() {
        return CONFIG.timeScale();
    }

    /** The guest init starts the agent with the limits and its virtio-serial port (a node of its own outside /dev). */
    @Override
    protected String agentCommandLine(Limits limits) {
        return "/.airlock/airlock-agent\0--nofile\0" + limits.openFiles() + "\0--fsize\0" + limits.fileSizeBytes() + "\0/.airlock/port\0";
    }
}
