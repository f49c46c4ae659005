package dev.airlock.core.contract;

import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Limits;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestInstance;

import java.nio.file.Path;
import java.util.List;

/**
 * The contract every isolation driver passes: lifecycle, exec, files, limits, and the hostile
 * cases (host files, writes outside /workspace and /tmp, host processes, privileges, each denied
 * system call family, fork, memory and disk bombs, timeouts, outliving the run, leftover data,
 * network, the egress bridge, other sandboxes, host information, inputs) and pause and resume, each concern with a leak check after it.
 *
 * <p>A driver module runs it by extending this class once per driver configuration, giving its
 * driver and the few things only the driver knows (the hooks below); every concern then runs as a
 * nested class of that one test class, on a fresh engine of its own:
 *
 * <pre>{@code
 * class RuncContractTest extends DriverContract {
 *     protected IsolationDriver newDriver() { return new OciDriver(CONFIG); }
 *     ...
 * }
 * }</pre>
 *
 * <p>Each concern carries a tag of its name, so one concern runs alone:
 * {@code mvn -pl airlock-oci -am test -Dtest=RuncContractTest -Dgroups=Pause -Dsurefire.failIfNoSpecifiedTests=false}.
 * About one case of each concern is tagged {@code smoke}: one that exercises what differs between
 * tiers (the kernel, the file system path, the egress bridge, the process tree, the teardown). A
 * driver test tagged {@code tier-contract} runs only those in {@code bin/test}'s fast lane, and every
 * case in {@code bin/test --full} (CONTRIBUTING.md); the container tier's runs every case in both.
 *
 * <p>Every case runs real hostile code in a real sandbox of the driver. A fake driver is fine for
 * service-level unit tests elsewhere, never here: passing this suite is the proof that a
 * driver's controls hold.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class DriverContract {

    /** A new instance of the driver under test; each concern makes one and closes it. */
    protected abstract IsolationDriver newDriver();

    /**
     * What sandboxes whose ids start with {@code sandboxIdPrefix} left on the host (processes,
     * runtime state, cgroups, mounts, directories, one line each), after giving exiting processes
     * time to go. Empty means nothing leaked.
     */
    protected abstract List<String> leftovers(String sandboxIdPrefix);

    /** The host directory where the driver keeps its state: no sandbox may see it or name it as an input. */
    protected abstract Path hostStateDirectory();

    /**
     * Whether host uid {@code hostUid} is what uid {@code sandboxUid} inside some sandbox of this
     * driver runs as on the host: an unprivileged id of the sandboxes' own, never a host account.
     */
    protected abstract boolean isSandboxHostUid(long hostUid, int sandboxUid);

    /** The command line of the sandbox's PID 1 (its agent) for a sandbox with {@code limits}, NUL-separated as in /proc. */
    protected abstract String agentCommandLine(Limits limits);

    /**
     * Processes beside the agent that wait in every sandbox of this driver while its code runs:
     * the container tier keeps one spare execution supervisor (a fork of the agent, placed ahead in
     * the next execution's cgroup); 0 by default.
     */
    protected int spareSupervisors() {
        return 0;
    }

    /**
     * The kernel that serves the sandboxes' system calls: the host's (the default) or gVisor's
     * Sentry. The few cases whose outcome depends on it assert each kernel's own, saying why.
     */
    protected SandboxKernel kernel() {
        return SandboxKernel.HOST;
    }

    /**
     * How many times slower than a container this driver's sandboxes run code: 1 for runc and runsc,
     * more for a guest under software emulation (TCG), where an interpreter takes seconds to start.
     * The few cases whose timeout is about a control (a kill that cannot be dodged, output kept up to
     * the kill), not about speed, multiply their timeouts by it, so the program reaches the point
     * the case is about before the kill comes; what they assert stays the same.
     */
    protected int timeScale() {
        return 1;
    }

    /**
     * What every sandbox of every concern starts from (a concern adds its limits, inputs or
     * network): {@link SandboxSpec#defaults()}, the {@code system} image, unless the driver's test
     * runs the contract against sandboxes of another image.
     */
    protected SandboxSpec sandboxSpec() {
        return SandboxSpec.defaults();
    }

    /**
     * Whether this test runs {@code concern} (one of the nested classes below); a concern it does
     * not run is reported as skipped. All of them, unless the driver's test runs a subset (such as
     * the concerns that depend on the sandbox's root file system, against another image).
     */
    protected boolean runs(Class<?> concern) {
        return true;
    }

    @Nested
    @Tag("EngineLifecycle")
    class EngineLifecycle extends EngineLifecycleContract {
        EngineLifecycle() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("FilesystemIsolation")
    class FilesystemIsolation extends FilesystemIsolationContract {
        FilesystemIsolation() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("InputsIsolation")
    class InputsIsolation extends InputsIsolationContract {
        InputsIsolation() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("ProcessIsolation")
    class ProcessIsolation extends ProcessIsolationContract {
        ProcessIsolation() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("Privilege")
    class Privilege extends PrivilegeContract {
        Privilege() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("SyscallFilter")
    class SyscallFilter extends SyscallFilterContract {
        SyscallFilter() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("ResourceLimits")
    class ResourceLimits extends ResourceLimitsContract {
        ResourceLimits() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("NetworkIsolation")
    class NetworkIsolation extends NetworkIsolationContract {
        NetworkIsolation() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("CrossSandbox")
    class CrossSandbox extends CrossSandboxContract {
        CrossSandbox() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("EgressBridge")
    class EgressBridge extends EgressBridgeContract {
        EgressBridge() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("HostInformation")
    class HostInformation extends HostInformationContract {
        HostInformation() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("Pause")
    class Pause extends PauseContract {
        Pause() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("Terminal")
    class Terminal extends TerminalContract {
        Terminal() {
            super(DriverContract.this);
        }
    }

    @Nested
    @Tag("InboundPorts")
    class InboundPorts extends InboundPortsContract {
        InboundPorts() {
            super(DriverContract.this);
        }
    }
}
