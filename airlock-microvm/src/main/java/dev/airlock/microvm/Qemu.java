package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;
import dev.airlock.core.SandboxBroker;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of one guest's QEMU: the {@code microvm} machine under software emulation (TCG)
 * or KVM, no default device, no network device, no display, seccomp on; the guest's kernel and
 * initramfs; the image: the host's /usr shared read-only over 9p for the image {@code system}, a
 * stored image's read-only squashfs disk ({@link GuestDisks}) as a virtio-blk device otherwise; the sandbox's inputs over 9p (their mount
 * points in the jail's root, {@value #INPUTS_DIR}, each a read-only bind of its host path); the agent's channel a virtio-serial port
 * whose host end is a unix socket QEMU listens on; the serial console another socket, read by the
 * host ({@link GuestConsole}).
 *
 * <p>Why microvm, not pc: it has no PCI bus, no SeaBIOS (its firmware, qboot, jumps straight into
 * the kernel) and a few-hundred-byte ACPI table, so the guest kernel probes next to nothing; its
 * devices are virtio-mmio ({@code virtio-*-device}, found through ACPI by the {@code virtio_mmio}
 * module). It has no HPET and, under TCG, the PIT calibration of the TSC fails (the emulated PIT
 * is too irregular), which used to hang the boot: under TCG the guest's TSC is the host's, so the
 * kernel is told its frequency ({@code tsc_early_khz}, {@link #hostTscKhz}) and that it is
 * reliable. docs/security-model.md ("The boot") has the figures before and after.
 */
final class Qemu {

    static final String BINARY = "qemu-system-x86_64";
    /** Guest memory beyond the sandbox's limit: the guest kernel's own share (about 50 MiB) and headroom. */
    static final long GUEST_KERNEL_BYTES = 128L << 20;
    /** The virtio-serial port's name, which the guest init looks for. */
    static final String PORT_NAME = "airlock";
    /** The egress bridge's virtio-serial port: its own, so egress bytes never delay the agent's control frames. */
    static final String EGRESS_PORT_NAME = "airlock-egress";
    /** The guest init's control port (a reseed and a clock step after a restore): root's in the guest, never the sandbox's. */
    static final String CTL_PORT_NAME = "airlock-ctl";
    /** The file descriptor a restored guest's QEMU inherits its RAM on ({@link SnapshotRam}): the jail opens it. */
    static final int RAM_FD = 7;
    /**
     * Where the jail ({@link VmmJail}) binds a sandbox's inputs in QEMU's root, one mount point per input: the one
     * directory QEMU exports to the guest for them (9p tag {@code inputs}), so nothing of the inputs' host parents is exported.
     */
    static final String INPUTS_DIR = "/inputs";
    /**
     * Where the jail binds the public files of a sandbox's run directory (the egress trust bundle the broker writes) in
     * QEMU's root: exported to the guest (9p tag {@code run}), whose init copies them into /run/airlock, where the broker's
     * environment variables say they are (not /run: the jail binds the guest's socket directory below the state root, /run/airlock/microvm by
     * default, at its own path). The run directory's sockets are never exported (EgressMux serves the bridge).
     */
    static final String RUN_FILES_DIR = "/run-files";
    /** Where the jail binds a stored image's disk ({@link GuestDisks}) in QEMU's root. */
    static final String DISK_DIR = "/disk";

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

    /** The guest's vCPUs: the cpu limit rounded up, at most the host's. */
    static int cpus(Limits limits) {
        return Math.clamp((long) Math.ceil(limits.cpus()), 1, Runtime.getRuntime().availableProcessors());
    }

    /**
     * The command that boots one guest.
     *
     * @param dir    the guest's own host directory: the agent's, the console's and the egress bridge's sockets go there
     * @param disk   the stored image's disk, its path in QEMU's root; null for the image {@code system} (the host's /usr over 9p)
     * @param restore whether the guest is restored from a memory snapshot: its RAM is then the snapshot's, mapped privately
     *                (copy-on-write) from the sealed memory file QEMU inherits on {@value #RAM_FD}, and it waits for its
     *                state ({@code -incoming defer}); otherwise its RAM is a shared memory file of its own
     *                (so that a snapshot can save the device state alone and copy the RAM beside it)
     * @param egress whether the guest bridges egress ({@link EgressMux}): a second port, and the port number for the init
     * @param inputs whether the sandbox has inputs: {@value #INPUTS_DIR} of QEMU's root is exported read-only, for the init to mount
     * @param runFiles whether the sandbox's run directory has public files: {@value #RUN_FILES_DIR} of QEMU's root is exported
     *                 read-only, for the init to copy into /run/airlock
     */
    static List<String> command(Path binary, String accelerator, GuestKernel kernel, Path initramfs, Limits limits, Path dir,
                                String disk, boolean restore, boolean egress, boolean inputs, boolean runFiles) {
        long memoryMiB = guestMemoryBytes(limits) >> 20;
        int cpus = cpus(limits);
        boolean kvm = accelerator.equals(MicroVmDriverConfig.KVM);
        List<String> c = new ArrayList<>(List.of(binary.toString(),
                "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
                "-M", "microvm,memory-backend=ram", "-cpu", kvm ? "host" : "max", "-accel", kvm ? "kvm" : "tcg,tb-size=" + VmmJail.TCG_CACHE_MIB,
                "-m", memoryMiB + "M", "-smp", Integer.toString(cpus),
                "-object", restore ? "memory-backend-file,id=ram,size=" + memoryMiB + "M,share=off,mem-path=/proc/self/fd/" + RAM_FD
                        : "memory-backend-memfd,id=ram,size=" + memoryMiB + "M,share=on",
                // seccomp: no obsolete calls, no set*uid, no fork or exec, no changing priorities or affinity
                "-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
                "-nic", "none",
                "-kernel", option(kernel.vmlinux()), "-initrd", option(initramfs), "-append", kernelCommandLine(accelerator, limits, disk != null, egress, inputs, runFiles),
                // the console: a socket the host reads as it comes (GuestConsole); QEMU waits for the host to connect to it
                "-chardev", "socket,id=console,server=on,wait=on,path=" + option(dir.resolve(MicroVmDriver.CONSOLE_SOCKET)),
                "-serial", "chardev:console",
                "-device", "virtio-serial-device",
                "-chardev", "socket,id=agent,server=on,wait=off,path=" + option(dir.resolve(MicroVmDriver.SOCKET_NAME)),
                "-device", "virtserialport,chardev=agent,name=" + PORT_NAME,
                "-chardev", "socket,id=ctl,server=on,wait=off,path=" + option(dir.resolve(MicroVmDriver.CTL_SOCKET)),
                "-device", "virtserialport,chardev=ctl,name=" + CTL_PORT_NAME,
                // the host's control of QEMU itself: stop, save, continue
                "-chardev", "socket,id=qmp,server=on,wait=off,path=" + option(dir.resolve(MicroVmDriver.QMP_SOCKET)),
                "-mon", "chardev=qmp,mode=control"));
        if (disk == null) {
            c.addAll(List.of("-fsdev", "local,id=usr,path=/usr,readonly=on,security_model=none,multidevs=remap",
                    "-device", "virtio-9p-device,fsdev=usr,mount_tag=usr"));
        } else {
            // read-only to QEMU too; no cache of QEMU's own (the host's page cache serves every guest of the image)
            c.addAll(List.of("-drive", "id=image,if=none,format=raw,readonly=on,file=" + disk.replace(",", ",,"),
                    "-device", "virtio-blk-device,drive=image"));
        }
        if (inputs) {
            // The inputs' mount points are binds of several host file systems: remap their inode numbers into one space
            c.addAll(List.of("-fsdev", "local,id=inputs,path=" + INPUTS_DIR + ",readonly=on,security_model=none,multidevs=remap",
                    "-device", "virtio-9p-device,fsdev=inputs,mount_tag=inputs"));
        }
        if (runFiles) {
            c.addAll(List.of("-fsdev", "local,id=run,path=" + RUN_FILES_DIR + ",readonly=on,security_model=none,multidevs=remap",
                    "-device", "virtio-9p-device,fsdev=run,mount_tag=run"));
        }
        if (egress) {
            c.addAll(List.of("-chardev", "socket,id=egress,server=on,wait=off,path=" + option(dir.resolve(MicroVmDriver.EGRESS_SOCKET)),
                    "-device", "virtserialport,chardev=egress,name=" + EGRESS_PORT_NAME));
        }
        if (restore) {
            // the state comes once the host has set the migration's capabilities (GuestSnapshot.restoreInto)
            c.addAll(List.of("-incoming", "defer"));
        }
        return c;
    }

    /**
     * The guest kernel's command line: the console, the guest init's settings ({@code airlock.*}), and
     * what makes the boot short under TCG (measured by QEMU's CPU time to the agent's HELLO;
     * docs/security-model.md):
     * <ul>
     * <li>{@code quiet}: the emulated serial port costs time per byte;
     * <li>{@code pci=off}: microvm has no PCI bus, and the kernel need not look for one;
     * <li>{@code no_timer_check}: under TCG on a busy host the IO-APIC timer check can fail and panic the boot;
     * <li>{@code cryptomgr.notests}: no boot-time self-test of every crypto algorithm (0.6 s under TCG): they
     *     check that the kernel's implementations compute what they should, and change no permission;
     * <li>under TCG, {@code tsc_early_khz} and {@code tsc=reliable}: microvm has no HPET and the PIT
     *     calibration fails under emulation, which hangs the boot; the guest's TSC is the host's.
     * </ul>
     */
    static String kernelCommandLine(String accelerator, Limits limits, boolean image, boolean egress, boolean inputs, boolean runFiles) {
        List<String> append = new ArrayList<>(List.of("console=ttyS0", "quiet", "panic=-1", "no_timer_check", "cryptomgr.notests",
                "pci=off"));
        if (!accelerator.equals(MicroVmDriverConfig.KVM)) {
            append.add("tsc_early_khz=" + hostTscKhz());
            append.add("tsc=reliable");
        }
        append.addAll(List.of("airlock.disk=" + limits.diskBytes(), "airlock.nofile=" + limits.openFiles(),
                "airlock.fsize=" + limits.fileSizeBytes(), "airlock.pids=" + limits.pids(),
                "airlock.memory=" + limits.memoryBytes()));
        if (image) {
            append.add("airlock.image=1");
        }
        if (egress) {
            append.add("airlock.egress=" + SandboxBroker.BRIDGE_PORT);
        }
        if (inputs) {
            append.add("airlock.inputs=1");
        }
        if (runFiles) {
            append.add("airlock.run=1");
        }
        return String.join(" ", append);
    }

    /**
     * The host's TSC frequency in kHz, which under TCG is the guest's (QEMU's emulated {@code rdtsc}
     * reads the host's counter): the first "cpu MHz" of /proc/cpuinfo. That is the TSC frequency in
     * a virtual machine (as here) and on hosts without frequency scaling; where "cpu MHz" follows
     * frequency scaling, the guest's clock runs at the wrong rate (time inside the guest only: the
     * host measures every timeout itself). Such hosts are usually bare metal with a working KVM.
     */
    static long hostTscKhz() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"), StandardCharsets.US_ASCII)) {
                if (line.startsWith("cpu MHz")) {
                    long khz = Math.round(Double.parseDouble(line.substring(line.indexOf(':') + 1).strip()) * 1000);
                    if (khz > 0) {
                        return khz;
                    }
                }
            }
        } catch (IOException | NumberFormatException e) {
            throw AirlockException.unavailable("cannot read the host's CPU frequency from /proc/cpuinfo (" + e.getMessage()
                    + "): the microvm driver gives it to a guest under software emulation (TCG) as its TSC frequency");
        }
        throw AirlockException.unavailable("/proc/cpuinfo has no 'cpu MHz' line: the microvm driver gives the host's CPU"
                + " frequency to a guest under software emulation (TCG) as its TSC frequency, and finds none on this host");
    }

    /** A path inside a QEMU option, where a comma ends the value unless doubled. */
    private static String option(Path path) {
        return path.toString().replace(",", ",,");
    }
}
