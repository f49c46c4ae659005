package dev.airlock.oci.image;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The images this process's sandboxes hold ({@link ImageStore#use}): per image tree, one shared
 * lock on its lock file, which a removal (of this process or another) must take exclusively, and a
 * count of the leases on it; the lock goes with the last lease.
 */
final class ImageLeases {

    private static final Map<Path, Use> USES = new HashMap<>();

    private ImageLeases() {
    }

    /** What runs while no lease can be taken or given back, told how many this process holds. */
    interface WithLeases<T> {
        T run(int leases) throws IOException;
    }

    /** Runs {@code action} with the number of this process's leases on {@code lockFile}'s tree; none is taken or ends meanwhile. */
    static <T> T whileNoneTaken(Path lockFile, WithLeases<T> action) throws IOException {
        synchronized (USES) {
            Use use = USES.get(lockFile);
            return action.run(use == null ? 0 : use.count);
        }
    }

    /**
     * A lease on the image {@code name}'s tree {@code rootfs}, guarded by {@code lockFile}: refused
     * (CONFLICT) while the image is being removed, {@code gone} when it was removed or replaced
     * before the lock was had.
     */
    static ImageStore.Lease hold(String name, String digest, Path rootfs, Path lockFile, Supplier<AirlockException> gone) {
        requireSearchableByOthers(rootfs);
        synchronized (USES) {
            Use use = USES.get(lockFile);
            if (use == null) {
                try {
                    FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
                    FileLock lock;
                    try {
                        lock = channel.tryLock(0, 1, true);
                    } catch (OverlappingFileLockException e) {
                        lock = null;
                    }
                    if (lock == null) {
                        channel.close();
                        throw new AirlockException(AirlockException.Kind.CONFLICT, "image '" + name + "' is being removed");
                    }
                    use = new Use(channel);
                } catch (IOException e) {
                    throw AirlockException.internal("cannot hold image '" + name + "': " + e.getMessage(), e);
                }
                // removed or replaced while we waited for the lock: the files may be gone
                if (!Files.isDirectory(rootfs, LinkOption.NOFOLLOW_LINKS)) {
                    use.close();
                    throw gone.get();
                }
                USES.put(lockFile, use);
            }
            use.count++;
        }
        return new Held(name, digest, rootfs, ImageRecipe.readEnvironment(rootfs), lockFile);
    }

    /** Sandboxes run as host ids of their own: every directory above an image's root must let others pass. */
    private static void requireSearchableByOthers(Path dir) {
        try {
            for (Path d = dir.toRealPath(); d != null; d = d.getParent()) {
                if (!Files.getPosixFilePermissions(d).contains(PosixFilePermission.OTHERS_EXECUTE)) {
                    throw AirlockException.unavailable("cannot use the image store at " + dir.getParent().getParent() + ": " + d
                            + " does not let others pass (chmod o+x " + d + "), and sandboxes, which run as host ids of"
                            + " their own, must pass it to reach the image's files");
                }
            }
        } catch (IOException e) {
            throw AirlockException.internal("cannot check " + dir + ": " + e.getMessage(), e);
        }
    }

    private static final class Held implements ImageStore.Lease {
        private final String name;
        private final String digest;
        private final Path rootfs;
        private final Map<String, String> environment;
        private final Path lockFile;
        private boolean closed;

        Held(String name, String digest, Path rootfs, Map<String, String> environment, Path lockFile) {
            this.name = name;
            this.digest = digest;
            this.rootfs = rootfs;
            this.environment = environment;
            this.lockFile = lockFile;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public String digest() {
            return digest;
        }

        @Override
        public Path rootfs() {
            return rootfs;
        }

        @Override
        public Map<String, String> environment() {
            return environment;
        }

        @Override
        public void close() {
            synchronized (USES) {
                if (closed) {
                    return;
                }
                closed = true;
                Use u = USES.get(lockFile);
                if (u != null && --u.count == 0) {
                    USES.remove(lockFile);
                    u.close();
                }
            }
        }
    }

    private static final class Use {
        final FileChannel channel;
        int count;

        Use(FileChannel channel) {
            this.channel = channel;
        }

        void close() {
            try {
                channel.close();
            } catch (IOException ignored) {
                // the lock goes with the channel anyway
            }
        }
    }
}
