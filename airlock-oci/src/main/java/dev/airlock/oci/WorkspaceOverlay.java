package dev.airlock.oci;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A restored sandbox's {@code /workspace} as an overlay shared copy-on-write: the snapshot's files,
 * a read-only host tree whose files belong to {@link dev.airlock.core.SandboxSpec#WORKSPACE_OWNER}
 * (an id no host account uses), are its lower layer, seen through an idmapped bind mount that maps
 * that id to the host uid of the sandbox's user ({@link SandboxUserNamespace#forWorkspaceTree}),
 * so inside they are the sandbox user's ({@link SystemImage#SANDBOX_UID}); its upper layer and overlay
 * work directory lie on a tmpfs of the sandbox's disk size. All three are mounted by host root in
 * the host's mount namespace under the sandbox's directory ({@code <dir>/lower}, {@code <dir>/cap},
 * {@code <dir>/merged}), and runc bind-mounts {@code merged} at {@code /workspace}.
 *
 * <p>Why each piece: overlay copies a file up (on a write, chmod, or chown) as the file's owner, and
 * refuses to when that owner is not mapped in the caller's namespace; each runc sandbox has its own
 * host id range, so a tree shared by several needs a per-sandbox idmap. runc 1.1.5 cannot make
 * idmapped mounts (its {@code idmap} option came in 1.2) and util-linux 2.38 neither, so the system
 * calls ({@code open_tree}, {@code mount_setattr(MOUNT_ATTR_IDMAP)}, {@code move_mount}, {@code
 * mount}, {@code umount2}) are made here through the FFM API: one place for them.
 *
 * <p>The idmapped lower is read-only, nosuid and nodev; the overlay and the tmpfs are nosuid and
 * nodev. The sandbox sees only the overlay: the tree's host path is in no mount of its namespace.
 */
final class WorkspaceOverlay {

    static final String LOWER = "lower";
    static final String CAP = "cap";
    static final String MERGED = "merged";

    // System call numbers: the same on x86-64 and arm64 (new calls share one table since Linux 5.1).
    private static final long SYS_OPEN_TREE = 428;
    private static final long SYS_MOVE_MOUNT = 429;
    private static final long SYS_MOUNT_SETATTR = 442;
    private static final int AT_FDCWD = -100;
    private static final int AT_EMPTY_PATH = 0x1000;
    private static final int OPEN_TREE_CLONE = 1;
    private static final int O_CLOEXEC = 02000000;
    private static final int O_RDONLY = 0;
    private static final int MOVE_MOUNT_F_EMPTY_PATH = 0x4;
    private static final long MOUNT_ATTR_RDONLY = 0x1;
    private static final long MOUNT_ATTR_NOSUID = 0x2;
    private static final long MOUNT_ATTR_NODEV = 0x4;
    private static final long MOUNT_ATTR_IDMAP = 0x00100000;
    private static final long MS_NOSUID = 2;
    private static final long MS_NODEV = 4;
    private static final int MNT_DETACH = 2;
    private static final int UMOUNT_NOFOLLOW = 8;
    private static final int EINVAL = 22;
    private static final int ENOENT = 2;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    /** {@code long syscall(long number, ...)} with five arguments (mount_setattr, move_mount), and with three (open_tree). */
    private static final MethodHandle SYSCALL6 = handle("syscall", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
            Linker.Option.firstVariadicArg(1));
    private static final MethodHandle SYSCALL4 = handle("syscall", FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), Linker.Option.firstVariadicArg(1));
    private static final MethodHandle OPEN = handle("open", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
            ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = handle("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    private static final MethodHandle MOUNT = handle("mount", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
            ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
    private static final MethodHandle UMOUNT2 = handle("umount2", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS,
            ValueLayout.JAVA_INT));
    private static final MethodHandle STRERROR = LINKER.downcallHandle(LIBC.find("strerror").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.ADDRESS.withTargetLayout(MemoryLayout.sequenceLayout(256, ValueLayout.JAVA_BYTE)),
                    ValueLayout.JAVA_INT));

    private WorkspaceOverlay() {
    }

    private static MethodHandle handle(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        Linker.Option[] all = java.util.Arrays.copyOf(options, options.length + 1);
        all[options.length] = CAPTURE_ERRNO;
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(), descriptor, all); // the call state comes first
    }

    /**
     * Mounts the overlay for one sandbox under {@code dir} and returns {@code merged}: lower {@code
     * tree}, idmapped through the user namespace at {@code userNamespace} (a {@code /proc/<pid>/ns/user}
     * path whose id maps are written: the tree's owner to the sandbox user's host uid), read-only; upper and
     * work directories on a tmpfs of {@code capBytes}, the upper owned by the sandbox user's host
     * uid. {@code dir} is made here, owned by the sandbox's host root id ({@code hostIdBase}) with
     * mode {@code rwx------}: the runtime, as that id, reaches {@code merged} to bind it, and no other
     * host user can reach into any of it. On failure whatever was mounted is unmounted again and
     * the error names the step.
     */
    static Path mount(Path dir, Path tree, String userNamespace, long hostIdBase, long capBytes) {
        long sandboxHostUid = hostIdBase + SystemImage.SANDBOX_UID;
        if (dir.toString().matches(".*[,:\\\\].*")) {
            // the overlay's options name its layers' paths, split at ',' and ':'
            throw AirlockException.unavailable("cannot lay the snapshot's files under /workspace as an overlay: the state root's path "
                    + dir + " holds ',', ':' or '\\': choose a state root without them");
        }
        try {
            Files.createDirectory(dir);
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
            Files.setAttribute(dir, "unix:uid", (int) hostIdBase, LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(dir, "unix:gid", (int) hostIdBase, LinkOption.NOFOLLOW_LINKS);
            Path lower = Files.createDirectory(dir.resolve(LOWER));
            Path cap = Files.createDirectory(dir.resolve(CAP));
            Path merged = Files.createDirectory(dir.resolve(MERGED));
            try (Arena arena = Arena.ofConfined()) {
                mountCall(arena, "airlock-workspace", cap, "tmpfs", MS_NOSUID | MS_NODEV, "size=" + Math.max(4096, capBytes) + ",mode=0711");
                Path upper = Files.createDirectory(cap.resolve("upper"));
                Files.setPosixFilePermissions(upper, PosixFilePermissions.fromString("rwxr-xr-x"));
                Files.setAttribute(upper, "unix:uid", (int) sandboxHostUid, LinkOption.NOFOLLOW_LINKS);
                Files.setAttribute(upper, "unix:gid", (int) sandboxHostUid, LinkOption.NOFOLLOW_LINKS);
                Path work = Files.createDirectory(cap.resolve("work"));
                Files.setPosixFilePermissions(work, PosixFilePermissions.fromString("rwx------"));
                idmappedBind(arena, tree, lower, userNamespace);
                mountCall(arena, "airlock-workspace", merged, "overlay", MS_NOSUID | MS_NODEV,
                        "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work);
            }
            return merged;
        } catch (IOException | RuntimeException e) {
            unmount(dir);
            throw AirlockException.unavailable("cannot lay the snapshot's files under /workspace as an overlay: " + e.getMessage());
        }
    }

    /** The read-only, idmapped clone of {@code tree} attached at {@code target}. */
    private static void idmappedBind(Arena arena, Path tree, Path target, String userNamespace) throws IOException {
        MemorySegment state = arena.allocate(CALL_STATE);
        int treeFd = (int) check(syscall(SYSCALL4, state, SYS_OPEN_TREE, AT_FDCWD, path(arena, tree), OPEN_TREE_CLONE | O_CLOEXEC),
                state, "open_tree(" + tree + ", OPEN_TREE_CLONE)");
        try {
            int nsFd = (int) check(call(OPEN, state, arena.allocateFrom(userNamespace), O_RDONLY | O_CLOEXEC), state, "open(" + userNamespace + ")");
            try {
                MemorySegment attr = arena.allocate(32, 8); // struct mount_attr: attr_set, attr_clr, propagation, userns_fd
                attr.set(ValueLayout.JAVA_LONG, 0, MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
                attr.set(ValueLayout.JAVA_LONG, 24, nsFd);
                check(syscall(SYSCALL6, state, SYS_MOUNT_SETATTR, treeFd, arena.allocateFrom("").address(), AT_EMPTY_PATH, attr.address(), 32),
                        state, "mount_setattr(MOUNT_ATTR_IDMAP) of " + tree);
            } finally {
                call(CLOSE, state, nsFd);
            }
            check(syscall(SYSCALL6, state, SYS_MOVE_MOUNT, treeFd, arena.allocateFrom("").address(), AT_FDCWD, path(arena, target),
                    MOVE_MOUNT_F_EMPTY_PATH), state, "move_mount to " + target);
        } finally {
            call(CLOSE, state, treeFd);
        }
    }

    /**
     * Detaches whatever of the overlay is mounted under {@code dir} (lazily: a process still inside
     * keeps it until it ends, and the directory is free at once), the overlay first. Quiet about a
     * part that is not mounted; a part that stays mounted is for the leak check to show.
     */
    static void unmount(Path dir) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            for (String part : new String[]{MERGED, LOWER, CAP}) {
                Path point = dir.resolve(part);
                if (!Files.isDirectory(point, LinkOption.NOFOLLOW_LINKS)) {
                    continue;
                }
                int rc = (int) call(UMOUNT2, state, arena.allocateFrom(point.toString()), MNT_DETACH | UMOUNT_NOFOLLOW);
                int errno = (int) ERRNO.get(state, 0L);
                if (rc != 0 && errno != EINVAL && errno != ENOENT) {
                    org.slf4j.LoggerFactory.getLogger(WorkspaceOverlay.class).warn("cannot unmount {}: {}", point, strerror(errno));
                }
            }
        }
    }

    private static void mountCall(Arena arena, String source, Path target, String type, long flags, String data) throws IOException {
        MemorySegment state = arena.allocate(CALL_STATE);
        check(call(MOUNT, state, arena.allocateFrom(source), arena.allocateFrom(target.toString()), arena.allocateFrom(type), flags,
                arena.allocateFrom(data)), state, "mount -t " + type + " " + target + " (" + data + ")");
    }

    private static long path(Arena arena, Path p) {
        return arena.allocateFrom(p.toString()).address();
    }

    private static long syscall(MethodHandle handle, MemorySegment state, long... args) {
        Object[] all = new Object[args.length + 1];
        all[0] = state;
        for (int i = 0; i < args.length; i++) {
            all[i + 1] = args[i];
        }
        try {
            return (long) handle.invokeWithArguments(all);
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed: " + t, t);
        }
    }

    private static long call(MethodHandle handle, MemorySegment state, Object... args) {
        Object[] all = new Object[args.length + 1];
        all[0] = state;
        System.arraycopy(args, 0, all, 1, args.length);
        try {
            Object r = handle.invokeWithArguments(all);
            return r instanceof Integer i ? i : (long) r;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed: " + t, t);
        }
    }

    private static long check(long rc, MemorySegment state, String what) throws IOException {
        if (rc < 0) {
            int errno = (int) ERRNO.get(state, 0L);
            throw new IOException(what + " failed: " + strerror(errno) + " (errno " + errno + ")");
        }
        return rc;
    }

    private static String strerror(int errno) {
        try {
            return ((MemorySegment) STRERROR.invokeExact(errno)).getString(0);
        } catch (Throwable t) {
            return "errno " + errno;
        }
    }
}
