package dev.airlock.cli.verify;

import dev.airlock.core.DriverSettings;
import dev.airlock.core.IsolationDriver;
import dev.airlock.microvm.MicroVmDriver;
import dev.airlock.microvm.MicroVmDriverConfig;
import dev.airlock.microvm.MicroVmDriverProvider;
import dev.airlock.microvm.MicroVmLeakCheck;
import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;

/**
 * What verify attacks: the sandboxes of one isolation tier, with the driver settings to open it
 * and what the host can see of its sandboxes (their processes' cgroup, what a leak check finds).
 * The cases and scenarios are the same for every tier; where a control holds in a tier's own way,
 * a case says so ({@link VerifyCase#expectFor}).
 */
public sealed interface VerifyTarget {

    /** The isolation tiers, as profiles name them. */
    enum Tier {
        /** runc or crun: the host runs the sandbox's processes, and sees them. */
        CONTAINER,
        /** runsc: the host sees only the sandbox's Sentry and gofer; its processes are the Sentry's tasks. */
        GVISOR,
        /** a QEMU guest: the host sees only the jailed QEMU; the sandbox's processes are the guest kernel's. */
        MICROVM;

        /** Whether the sandbox's processes are invisible to the host, behind a kernel of the sandbox's own. */
        boolean ownKernel() {
            return this != CONTAINER;
        }

        /** What runs the sandbox's processes, as a finding names it. */
        String kernel() {
            return switch (this) {
                case CONTAINER -> "the host kernel";
                case GVISOR -> "its gVisor kernel";
                case MICROVM -> "its QEMU guest";
            };
        }
    }

    Tier tier();

    /** The runtime as {@code --runtime} names it: runc, runsc, a path, or microvm. */
    String runtime();

    /** The driver's own state directory. */
    Path stateRoot();

    /** What {@code --state-dir} says to reach this target's state (the microVM driver's is a directory below it). */
    Path stateDir();

    /** The same target with its state under {@code stateDir} instead, as {@code --state-dir} would put it. */
    VerifyTarget withStateDir(Path stateDir);

    /** The same target without deliberate weakenings: what recovery scenarios run against. */
    VerifyTarget unweakened();

    IsolationDriver open();

    /** The driver's settings, as a server holds them. */
    DriverSettings settings();

    /**
     * How many times longer code takes in this tier's sandboxes than in a container, where that
     * matters to a case: its timeouts are multiplied by it (a microVM guest under software
     * emulation: 5; see {@link MicroVmDriverConfig#timeScale()}).
     */
    default int timeScale() {
        return 1;
    }

    /** The cgroup parent of the sandboxes' host processes: {@code /<parent>/<sandbox id>} is in their cgroup lines. */
    String cgroupParent();

    /** What the tier's leak check finds of the sandboxes whose ids start with {@code prefix}; empty when nothing. */
    List<String> leftovers(String prefix);

    /** A target of the OCI driver: a container tier (runc, crun) or gVisor (runsc). */
    record Oci(OciDriverConfig config) implements VerifyTarget {

        @Override
        public Tier tier() {
            return Path.of(config.runtime()).getFileName().toString().equals("runsc") ? Tier.GVISOR : Tier.CONTAINER;
        }

        @Override
        public String runtime() {
            return config.runtime();
        }

        @Override
        public Path stateRoot() {
            return config.stateRoot();
        }

        @Override
        public Path stateDir() {
            return config.stateRoot();
        }

        @Override
        public VerifyTarget withStateDir(Path stateDir) {
            return new Oci(config.withStateRoot(stateDir));
        }

        @Override
        public VerifyTarget unweakened() {
            return new Oci(config.withWeakenings(Set.of()));
        }

        @Override
        public IsolationDriver open() {
            return new OciDriver(config);
        }

        @Override
        public DriverSettings settings() {
            return config.toSettings();
        }

        @Override
        public String cgroupParent() {
            return "airlock";
        }

        @Override
        public List<String> leftovers(String prefix) {
            return new LeakCheck(config).find(prefix);
        }
    }

    /** A target of the microVM driver: each sandbox a QEMU guest with its own kernel. */
    record MicroVm(MicroVmDriverConfig config) implements VerifyTarget {

        @Override
        public Tier tier() {
            return Tier.MICROVM;
        }

        @Override
        public String runtime() {
            return MicroVmDriverProvider.NAME;
        }

        @Override
        public Path stateRoot() {
            return config.stateRoot();
        }

        @Override
        public Path stateDir() {
            return config.stateRoot().getParent();
        }

        @Override
        public VerifyTarget withStateDir(Path stateDir) {
            return new MicroVm(config.withStateRoot(stateDir.resolve(MicroVmDriverProvider.NAME)));
        }

        @Override
        public VerifyTarget unweakened() {
            return this;
        }

        @Override
        public IsolationDriver open() {
            return new MicroVmDriver(config);
        }

        @Override
        public DriverSettings settings() {
            return config.toSettings();
        }

        @Override
        public int timeScale() {
            return config.timeScale();
        }

        @Override
        public String cgroupParent() {
            return MicroVmDriver.CGROUP_PARENT;
        }

        @Override
        public List<String> leftovers(String prefix) {
            return MicroVmLeakCheck.find(config.stateRoot(), prefix);
        }
    }
}
