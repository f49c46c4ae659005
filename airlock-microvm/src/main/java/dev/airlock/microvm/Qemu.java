package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of one guest's QEMU: the pc machine under software emulation (TCG) or KVM, no default
 * device, no network device, no display, seccomp on; the guest's kernel and initramfs; the host's
 * /usr shared read-only over 9p; the agent's channel a virtio-serial port whose host end is a unix
 * socket QEMU listens on; the serial console another socket, read by the host ({@link GuestConsole}).
 *
 * <p>The pc machine type, not microvm: under TCG here Debian's kernel hangs at clock calibration in
 * most boots of microvm, while pc boots every time (about 4 s with the uncompressed vmlinux).
 */
final class Qemu {

    static final String BINARY = "qemu-system-x86_64";
    /** Guest memory beyond the sandbox's limit: the guest kernel's own share (about 50 MiB) and headroom. */
    static final long GUEST_KERNEL_BYTES = 128L << 20;
    /** The virtio-serial port's name, which the guest init looks for. */
    static final String PORT_NAME = "airlock";

    private Qemu() {
    }

    /** QEMU's binary, found on PATH or in the usual places. */
    static Path find() {
        String path = System.getenv().getOrDefault("PATH", "") + ":/usr/bin:/usr/local/bin:/bin";
        for (String dir : path.split(File.pathSeparator)) {
            if (!dir.isEmpty()) {
                Path candidate = Path.of(dir, BINARY);
                if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                    return candidate;
                }
            }
        }
        throw AirlockException.unavailable(BINARY + " is not installed: install it (apt-get install qemu-system-x86) to use the"
                + " microvm driver");
    }

    /** The guest's RAM: the sandbox's memory limit and the guest kernel's share, in whole MiB. */
    static long guestMemoryBytes(Limits limits) {
        return ((limits.memoryBytes() + GUEST_KERNEL_BYTES + (1 << 20) - 1) >> 20) << 20;
    }

    /**
     * The command that boots one guest.
     *
     * @param dir the guest's own host directory: the agent's and the console's sockets go there
     */
    static List<String> command(Path binary, String accelerator, GuestKernel kernel, Path initramfs, Limits limits, Path dir) {
        long memoryMiB = guestMemoryBytes(limits) >> 20;
        int cpus = Math.clamp((long) Math.ceil(limits.cpus()), 1, Runtime.getRuntime().availableProcessors());
        // no_timer_check: under TCG on a busy host the kernel's IO-APIC timer check can fail and panic the boot
        String append = String.join(" ", "console=ttyS0", "quiet", "panic=-1", "no_timer_check",
                "airlock.disk=" + limits.diskBytes(), "airlock.nofile=" + limits.openFiles(),
                "airlock.fsize=" + limits.fileSizeBytes(), "airlock.pids=" + limits.pids(),
                "airlock.memory=" + limits.memoryBytes());
        List<String> c = new ArrayList<>(List.of(binary.toString(),
                "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
                "-M", "pc", "-cpu", accelerator.equals(MicroVmDriverConfig.KVM) ? "host" : "max", "-accel", accelerator.equals(MicroVmDriverConfig.KVM) ? "kvm" : "tcg,tb-size=" + VmmJail.TCG_CACHE_MIB,
                "-m", memoryMiB + "M", "-smp", Integer.toString(cpus),
                // seccomp: no obsolete calls, no set*uid, no fork or exec, no changing priorities or affinity
                "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
                "-nic", "none",
                "-kernel", option(kernel.vmlinux()), "-initrd", option(initramfs), "-append", append,
                // the console: a socket the host reads as it comes (GuestConsole); QEMU waits for the host to connect to it
                "-chardev", "socket,id=console,server=on,wait=on,path=" + option(dir.resolve(MicroVmDriver.CONSOLE_SOCKET)),
                "-serial", "chardev:console",
                "-fsdev", "local,id=usr,path=/usr,readonly=on,security_model=none",
                "-device", "virtio-9p-pci,fsdev=usr,mount_tag=usr",
                "-device", "virtio-serial-pci",
                "-chardev", "socket,id=agent,server=on,wait=off,path=" + option(dir.resolve(MicroVmDriver.SOCKET_NAME)),
                "-device", "virtserialport,chardev=agent,name=" + PORT_NAME));
        return c;
    }

    /** A path inside a QEMU option, where a comma ends the value unless doubled. */
    private static String option(Path path) {
        return path.toString().replace(",", ",,");
    }
}
