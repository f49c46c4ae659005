package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import dev.airlock.core.HostInputs;
import dev.airlock.core.Limits;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * The jail of one guest's QEMU, after Firecracker's jailer: QEMU runs as a host uid of its own
 * (one per live guest, from {@value #UID_BASE}), with no supplementary groups, no capabilities and
 * no_new_privs ({@code setpriv}), in its own mount, pid, network, IPC and UTS namespaces with a
 * /proc of its own pid namespace only ({@code unshare}), and in cgroups capping its memory (the
 * guest's RAM plus QEMU's own share), tasks and CPU time. A shell puts itself into the cgroups
 * before it executes the rest, so QEMU never runs outside them; the cgroups also find every
 * process of the guest when it is destroyed.
 *
 * <p>What QEMU sees of the host's files: a root of its own ({@link #ROOT_SCRIPT}: a read-only
 * tmpfs made in its mount namespace, then {@code pivot_root}) holding only the host's /usr
 * (read-only: QEMU's own binary, libraries and firmware, and the guest's 9p export), a /dev of
 * null, zero, random and urandom (and kvm under KVM), its pid namespace's /proc, the guest kernel
 * and initramfs (read-only), the one directory it may write (its sockets), and what it exports to
 * the guest ({@link Share}): the sandbox's inputs, each a read-only bind of its resolved host path on
 * a mount point of its own under {@value Qemu#INPUTS_DIR}, the public files of its run directory
 * (the egress trust bundle) under {@value Qemu#RUN_FILES_DIR}, and a stored image's disk under
 * {@value Qemu#DISK_DIR}; nothing of their host parents.
 */
final class VmmJail {

    private static final Logger LOG = LoggerFactory.getLogger(VmmJail.class);
    /** The first host uid of jailed QEMUs: below the OCI driver's sandbox ids (from 2,000,000,000). */
    static final long UID_BASE = 1_900_000_000L;
    static final int UID_SLOTS = 65536;
    /** The parent cgroup of every guest's, in each controller's hierarchy. */
    static final String CGROUP_PARENT = "airlock-microvm";
    /** QEMU's own memory beyond the guest's RAM: its code, the TCG translation cache ({@link #TCG_CACHE_MIB}), device buffers. */
    static final long VMM_OVERHEAD_BYTES = 256L << 20;
    /** The TCG translation cache, in MiB: QEMU's default (up to 1 GiB) would not fit the overhead above. */
    static final int TCG_CACHE_MIB = 64;
    /** QEMU's threads: vCPUs, the main loop, RCU, and a worker pool that 9p requests grow to 64. */
    static final int VMM_PIDS = 128;
    /**
     * Run as root in the new namespaces, before {@code setpriv}: builds QEMU's root on the mount point
     * {@code $1} and pivots into it, then executes the rest of its arguments. {@code $2} and {@code $3}
     * are the kernel and initramfs, {@code $4} the directory QEMU writes, {@code $5} the extra device (or ""),
     * {@code $6} the number of shared files ({@link Share}), each then its directory in the root, its name and its
     * host path. A mount point is a directory for a directory, a file for a file; the bind is read-only and not
     * recursive (HostInputs refuses an input directory with mounts below it). /usr and the merged-/usr
     * directories are bound recursively, so a host's mount below them (a GPU driver's, WSL2's) reaches
     * the guest too; QEMU exports them read-only ({@code readonly=on}) and the guest mounts them
     * read-only, nosuid and nodev, whatever the host's submount is.
     */
    static final String ROOT_SCRIPT = """
            set -e
            r=$1 kernel=$2 initramfs=$3 dir=$4 extra=$5 shares=$6
            shift 6
            mount -t tmpfs -o mode=0755,size=1m,nosuid,nodev tmpfs "$r"
            mkdir "$r/usr" "$r/dev" "$r/proc" "$r/old" "$r/inputs" "$r/run-files" "$r/disk"
            while [ "$shares" -gt 0 ]; do
              if [ -d "$3" ]; then mkdir "$r/$1/$2"; else touch "$r/$1/$2"; fi
              mount -o bind,ro,nosuid,nodev "$3" "$r/$1/$2"
              shift 3; shares=$((shares - 1))
            done
            mount --rbind -o ro,nosuid,nodev /usr "$r/usr"
            for d in bin sbin lib lib64; do
              if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$r/$d"
              elif [ -d "/$d" ]; then mkdir "$r/$d"; mount --rbind -o ro,nosuid,nodev "/$d" "$r/$d"; fi
            done
            for n in null zero random urandom $extra; do
              touch "$r/dev/$n"; mount -o bind,nosuid "/dev/$n" "$r/dev/$n"
            done
            mount -t proc -o nosuid,nodev,noexec proc "$r/proc"
            for f in "$kernel" "$initramfs"; do
              mkdir -p "$r$(dirname "$f")"; touch "$r$f"; mount -o bind,ro,nosuid,nodev "$f" "$r$f"
            done
            mkdir -p "$r$dir"; mount -o bind,nosuid,nodev "$dir" "$r$dir"
            cd "$r"
            pivot_root . old
            umount -l /old
            rmdir /old
            mount -o remount,ro,nosuid,nodev /
            exec "$@"
            """;

    /** The mount point of QEMU's root, in the guest's directory (root's, empty: only the jail's mount namespace uses it). */
    static final String ROOT_MOUNT = "root";

    private final String sandbox;
    private final long uid;
    private final Path slot;
    private final List<Path> cgroups;

    private VmmJail(String sandbox, long uid, Path slot, List<Path> cgroups) {
        this.sandbox = sandbox;
        this.uid = uid;
        this.slot = slot;
        this.cgroups = cgroups;
    }

    /**
     * Claims a uid for the guest {@code sandbox} and makes its cgroups, limited for a guest of
     * {@code guestMemoryBytes} and {@code limits}' cpus.
     */
    static VmmJail create(Path stateRoot, String sandbox, long guestMemoryBytes, Limits limits) {
        Path slot = claimUid(stateRoot, sandbox);
        long uid = UID_BASE + Integer.parseInt(slot.getFileName().toString());
        List<Path> made = new ArrayList<>();
        try {
            GuestCgroups.make(sandbox, guestMemoryBytes + VMM_OVERHEAD_BYTES, limits.cpus(), made);
            return new VmmJail(sandbox, uid, slot, List.copyOf(made));
        } catch (IOException | RuntimeException e) {
            made.reversed().forEach(GuestCgroups::removeCgroup);
            HostFiles.deleteTree(slot);
            throw AirlockException.unavailable("cannot make the cgroups of the QEMU of sandbox " + sandbox + ": " + e.getMessage()
                    + " (the microvm driver needs root and the memory, pids, cpu and (v1) freezer cgroup controllers; airlock doctor shows them)");
        }
    }

    long uid() {
        return uid;
    }

    List<Path> cgroups() {
        return cgroups;
    }

    /**
     * {@code qemu} (its command line) run inside this jail: a shell joins the cgroups and executes
     * {@code unshare}, which makes the namespaces, {@link #ROOT_SCRIPT}, which gives QEMU its root, and
     * {@code setpriv}, which drops to the guest's uid before QEMU starts. {@code kernel}, {@code initramfs}
     * and {@code dir} (its uid's, for its sockets) are the host files QEMU needs, at the same paths in its
     * root, built on the empty directory {@code rootMount}; {@code shares} are bound where QEMU exports them. {@code ram}
     * (null: none) is the path of a restored guest's RAM ({@link SnapshotRam#path()}), which QEMU inherits open on
     * {@value Qemu#RAM_FD}.
     */
    List<String> wrap(List<String> qemu, String accelerator, Path kernel, Path initramfs, Path dir, Path rootMount,
                      List<Share> shares, String ram) {
        StringBuilder join = new StringBuilder();
        for (Path cgroup : cgroups) {
            join.append("echo $$ > '").append(cgroup.resolve("cgroup.procs")).append("' && ");
        }
        if (ram != null) {
            // a restored guest's RAM: the host's sealed memory file, opened here as root and inherited by QEMU on its descriptor
            if (!ram.matches("/proc/[0-9]+/fd/[0-9]+")) {
                throw new IllegalArgumentException("not a descriptor's path: " + ram);
            }
            join.append("exec ").append(Qemu.RAM_FD).append("<").append(ram).append(" && ");
        }
        List<String> c = new ArrayList<>(List.of("/bin/sh", "-c", join + "exec \"$@\"", "airlock-vmm-jail",
                "unshare", "--mount", "--pid", "--fork", "--kill-child", "--net", "--ipc", "--uts",
                "/bin/sh", "-c", ROOT_SCRIPT, "airlock-vmm-root", rootMount.toString(), kernel.toString(),
                initramfs.toString(), dir.toString(), MicroVmDriverConfig.KVM.equals(accelerator) ? "kvm" : "",
                Integer.toString(shares.size())));
        for (Share share : shares) {
            c.addAll(List.of(share.directory(), share.name(), share.hostPath().toString()));
        }
        c.addAll(List.of("setpriv", "--reuid=" + uid, "--regid=" + uid, groups(accelerator), "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all", "--"));
        c.addAll(qemu);
        return c;
    }

    /**
     * A host file or directory QEMU exports to the guest read-only: bound at {@code /<directory>/<name>} in QEMU's root,
     * {@code directory} being {@value Qemu#INPUTS_DIR}, {@value Qemu#RUN_FILES_DIR} or {@value Qemu#DISK_DIR} without its slash.
     */
    record Share(String directory, String name, Path hostPath) {

        /** A sandbox's input, at its name. */
        static Share input(HostInputs.Resolved input) {
            return new Share(Qemu.INPUTS_DIR.substring(1), input.input().name(), input.realPath());
        }

        /** A public file of the sandbox's run directory (the egress trust bundle), at its name. */
        static Share runFile(Path file) {
            return new Share(Qemu.RUN_FILES_DIR.substring(1), file.getFileName().toString(), file);
        }

        /** A stored image's disk ({@link GuestDisks}), at its name in {@value Qemu#DISK_DIR}: QEMU gives it to the guest read-only. */
        static Share disk(Path file) {
            return new Share(Qemu.DISK_DIR.substring(1), file.getFileName().toString(), file);
        }
    }

    /** No supplementary group; under KVM, only /dev/kvm's group, so that QEMU may open it. */
    private static String groups(String accelerator) {
        if (!MicroVmDriverConfig.KVM.equals(accelerator)) {
            return "--clear-groups";
        }
        try {
            return "--groups=" + Files.getAttribute(Path.of("/dev/kvm"), "unix:gid");
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot read /dev/kvm's group for the jailed QEMU: " + e.getMessage()
                    + " (use the tcg accelerator where /dev/kvm is missing)");
        }
    }

    /**
     * Freezes ({@code freeze}) or thaws every process of the jail, QEMU with its guest: a frozen
     * guest is not scheduled at all, its clock included. Waits until the kernel says the whole
     * cgroup is frozen (at most {@link dev.airlock.core.CgroupFreezer#WAIT_MILLIS}).
     */
    void freeze(boolean freeze) {
        try {
            for (Path cgroup : cgroups) {
                dev.airlock.core.CgroupFreezer.freeze(cgroup, freeze);
            }
        } catch (IOException e) {
            throw AirlockException.internal("cannot " + (freeze ? "freeze" : "thaw") + " the QEMU of sandbox " + sandbox
                    + ": " + e.getMessage(), e);
        }
    }

    /** SIGKILL to every process of the jail until none is left (bounded), then its cgroups and uid go. */
    void destroy() {
        cgroups.forEach(GuestCgroups::thaw);
        GuestCgroups.killAll(cgroups.getFirst());
        cgroups.reversed().forEach(GuestCgroups::removeCgroup);
        HostFiles.deleteTree(slot);
    }

    /**
     * Removes the cgroups and uid slots of guests whose instance {@code dead} says is gone (their
     * processes killed first); returns what it removed. Guest cgroups are host-wide, but liveness is
     * known only for this state root's instances ({@code ours}: its directory is here, or a uid slot
     * here names it): the cgroup of another state root's guest is removed only once it is empty, and
     * its processes are never touched (that root's own engines and {@code airlock leaks} see to them).
     */
    static List<String> reap(Path stateRoot, Predicate<String> dead, Predicate<String> ours) {
        List<String> reaped = new ArrayList<>();
        // each uid slot of this root and the sandbox it was claimed for, read once
        java.util.Map<Path, String> owners = new java.util.LinkedHashMap<>();
        GuestCgroups.children(stateRoot.resolve("uids")).forEach(slot -> owners.put(slot, owner(slot)));
        java.util.Set<String> named = new java.util.HashSet<>();
        owners.values().forEach(owner -> named.add(instanceOf(owner)));
        for (Path parent : GuestCgroups.parents()) {
            for (Path cgroup : GuestCgroups.children(parent)) {
                String instance = instanceOf(cgroup.getFileName().toString());
                if (instance.isEmpty() || !dead.test(instance)) {
                    continue;
                }
                if (ours.test(instance) || named.contains(instance)) {
                    GuestCgroups.thaw(cgroup);
                    GuestCgroups.killAll(cgroup);
                } else if (!GuestCgroups.readPids(cgroup.resolve("cgroup.procs")).isEmpty()) {
                    continue;                          // another state root's guest, alive or not: not ours to judge
                }
                GuestCgroups.removeCgroup(cgroup);
                reaped.add("cgroup " + cgroup);
            }
        }
        for (java.util.Map.Entry<Path, String> claimed : owners.entrySet()) {
            Path slot = claimed.getKey();
            String owner = claimed.getValue();
            String instance = instanceOf(owner);
            if (!instance.isEmpty() && dead.test(instance)) {
                try {
                    Files.deleteIfExists(slot);
                    reaped.add("QEMU uid " + (UID_BASE + Long.parseLong(slot.getFileName().toString())) + " of " + owner);
                } catch (IOException | NumberFormatException e) {
                    // released while we looked, or not ours
                }
            }
        }
        return reaped;
    }

    /** The sandbox a uid slot was claimed for; "" when it cannot be read. */
    static String owner(Path slot) {
        try {
            return Files.readString(slot, StandardCharsets.US_ASCII).strip();
        } catch (IOException e) {
            return "";
        }
    }

    /** Every guest cgroup on this host, alive or not: for leak checks. */
    static List<Path> allCgroups() {
        List<Path> all = new ArrayList<>();
        GuestCgroups.parents().forEach(p -> all.addAll(GuestCgroups.children(p)));
        return all;
    }

    /** Every claimed uid slot under {@code stateRoot}. */
    static List<Path> allUidSlots(Path stateRoot) {
        return GuestCgroups.children(stateRoot.resolve("uids"));
    }

    /** The engine instance of a sandbox id {@code al-<instance>-<n>}, or "" when it is not one. */
    private static String instanceOf(String sandbox) {
        int end = sandbox.indexOf('-', 3);
        return sandbox.startsWith("al-") && end > 3 ? sandbox.substring(3, end) : "";
    }

    private static Path claimUid(Path stateRoot, String sandbox) {
        Path uids = stateRoot.resolve("uids");
        try {
            InstanceDirectory.createPrivate(uids);
            int start = Math.floorMod(sandbox.hashCode(), UID_SLOTS);
            for (int i = 0; i < UID_SLOTS; i++) {
                Path slot = uids.resolve(Integer.toString((start + i) % UID_SLOTS));
                try {
                    Files.createFile(slot);
                } catch (FileAlreadyExistsException e) {
                    continue;                      // another guest's
                }
                try {
                    Files.writeString(slot, sandbox + "\n", StandardCharsets.US_ASCII);
                    return slot;
                } catch (IOException e) {
                    Files.deleteIfExists(slot);    // claimed but not written (a full disk): not this guest's, nor anyone's
                    throw e;
                }
            }
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot claim a host uid for the QEMU of sandbox " + sandbox + " under " + uids + ": "
                    + e.getMessage());
        }
        throw AirlockException.unavailable("all " + UID_SLOTS + " QEMU uids are in use: destroy guests first");
    }

}
