package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Whether the microVM tier works on this host, for {@code airlock doctor}: proven by booting a
 * guest and running a command in it, never read off a device node. KVM is tried first when
 * {@code /dev/kvm} is there, within {@link #KVM_BOUND} (a paravirtual KVM may hang a stock guest
 * kernel forever); then software emulation (TCG), within the driver's start timeout.
 *
 * @param installed   whether QEMU is installed
 * @param works       whether a guest booted and ran {@code id -u} as the sandbox user
 * @param accelerator the accelerator that worked ({@link MicroVmDriverConfig#KVM} or {@link MicroVmDriverConfig#TCG}), or null
 * @param detail      what was seen, and why KVM was not used when it was not
 */
public record MicroVmProbe(boolean installed, boolean works, String accelerator, String detail) {

    /** How long a KVM guest may take to reach its agent: a working KVM boots in about a second. */
    static final Duration KVM_BOUND = Duration.ofSeconds(20);

    /** Boots one guest (two when KVM is there but fails) with {@code config}'s state and cache directories. */
    public static MicroVmProbe run(MicroVmDriverConfig config) {
        try {
            Qemu.find();
        } catch (AirlockException e) {
            return new MicroVmProbe(false, false, null, e.getMessage());
        }
        String kvm;
        Path dev = Path.of("/dev/kvm");
        if (!Files.exists(dev)) {
            kvm = "no /dev/kvm";
        } else if (!Files.isReadable(dev) || !Files.isWritable(dev)) {
            kvm = "/dev/kvm is not readable and writable by this user";
        } else {
            Boot underKvm = boot(config.withAccelerator(MicroVmDriverConfig.KVM).withStartTimeout(KVM_BOUND));
            if (underKvm.ok()) {
                return new MicroVmProbe(true, true, MicroVmDriverConfig.KVM, underKvm.detail());
            }
            kvm = "/dev/kvm is there but its guest failed: " + underKvm.detail();
        }
        Boot underTcg = boot(config.withAccelerator(MicroVmDriverConfig.TCG));
        return new MicroVmProbe(true, underTcg.ok(), underTcg.ok() ? MicroVmDriverConfig.TCG : null, underTcg.detail() + "; KVM not used: " + kvm);
    }

    /** One boot: whether it ran the command, and what was seen (with the time it took) or what went wrong. */
    private record Boot(boolean ok, String detail) {
    }

    private static Boot boot(MicroVmDriverConfig config) {
        long start = System.nanoTime();
        try (Engine engine = new Engine(new MicroVmDriver(config)); Sandbox sandbox = engine.create(SandboxSpec.defaults())) {
            long bootMillis = (System.nanoTime() - start) / 1_000_000;
            ExecResult r = sandbox.exec(ExecRequest.of("id", "-u").withTimeout(Duration.ofSeconds(30)));
            if (r.exitCode() != 0 || !r.stdoutText().strip().equals("1000")) {
                return new Boot(false, "the guest booted but 'id -u' gave: " + r.stdoutText().strip() + r.stderrText().strip());
            }
            return new Boot(true, String.format("booted a guest (kernel %s) in %.1f s and ran a command in it as uid 1000",
                    ((MicroVmDriver) engine.driver()).guestKernelRelease(), bootMillis / 1000.0));
        } catch (RuntimeException e) {
            return new Boot(false, "no guest within " + config.startTimeout().toSeconds() + " s under " + config.accelerator() + ": "
                    + firstSentence(e.getMessage()));
        }
    }

    /** A boot failure's message up to what QEMU and the console said: its what and why. */
    private static String firstSentence(String message) {
        if (message == null) {
            return "(no message)";
        }
        int qemuSaid = message.indexOf(" QEMU said:");
        return qemuSaid > 0 ? message.substring(0, qemuSaid) : message;
    }
}
