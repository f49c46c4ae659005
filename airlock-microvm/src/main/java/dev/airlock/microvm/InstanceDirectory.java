package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The host directory of one driver instance, {@code <root>/engines/<instance>/}: its initramfs,
 * one directory per guest, and a lock file held for the instance's whole life. An instance whose
 * lock can be taken is dead, and everything under its directory is an orphan. Only root uses these
 * directories, so they are mode 0700: a guest's jailed QEMU sees only what its jail binds into its
 * own root (the initramfs, 0644, and its own sockets' directory).
 */
final class InstanceDirectory implements AutoCloseable {

    static final int NAME_LENGTH = 8;
    /** Instances alive in this JVM: POSIX locks are per process, so they cannot tell us. */
    private static final Set<String> LIVE_IN_THIS_PROCESS = ConcurrentHashMap.newKeySet();
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Path root;
    private final String instance;
    private final Path dir;
    private final FileChannel lockChannel;

    private InstanceDirectory(Path root, String instance, Path dir, FileChannel lockChannel) {
        this.root = root;
        this.instance = instance;
        this.dir = dir;
        this.lockChannel = lockChannel;
    }

    static InstanceDirectory create(Path root) {
        String instance = newInstanceName();
        Path dir = root.resolve("engines").resolve(instance);
        try {
            createPrivate(root.resolve("engines"));
            createPrivate(dir);
            createPrivate(dir.resolve("sandboxes"));
            FileChannel channel = FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            if (channel.tryLock() == null) {
                channel.close();
                throw new IOException("lock of new instance " + instance + " is already held");
            }
            LIVE_IN_THIS_PROCESS.add(instance);
            return new InstanceDirectory(root, instance, dir, channel);
        } catch (IOException e) {
            HostFiles.deleteTree(dir);
            throw AirlockException.unavailable("cannot create the microvm driver's state directory under " + root + ": " + e.getMessage()
                    + " (the driver needs root, or a state directory it may write)");
        }
    }

    private static String newInstanceName() {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < NAME_LENGTH; i++) {
            sb.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
        }
        return sb.toString();
    }

    static void createPrivate(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
    }

    String instance() {
        return instance;
    }

    Path dir() {
        return dir;
    }

    Path sandboxDir(String id) {
        return dir.resolve("sandboxes").resolve(id);
    }

    /** The directory of the instance {@code name}, alive or not. */
    Path instanceDir(String name) {
        return root.resolve("engines").resolve(name);
    }

    /** Names of instances, other than those of this process, that are no longer alive. */
    List<String> deadInstances() {
        List<String> dead = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(root.resolve("engines"))) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                if (!LIVE_IN_THIS_PROCESS.contains(name) && Files.isDirectory(entry) && isDead(entry.resolve("lock"))) {
                    dead.add(name);
                }
            }
        } catch (IOException e) {
            return dead;
        }
        return dead;
    }

    /** Whether the instance {@code name} still holds its lock, in this process or another. */
    boolean isAlive(String name) {
        if (LIVE_IN_THIS_PROCESS.contains(name)) {
            return true;
        }
        Path lock = instanceDir(name).resolve("lock");
        return Files.exists(lock) && !isDead(lock);
    }

    private static boolean isDead(Path lockFile) {
        if (!Files.exists(lockFile)) {
            return true;
        }
        try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.WRITE)) {
            FileLock lock = ch.tryLock();
            if (lock == null) {
                return false;
            }
            lock.release();
            return true;
        } catch (OverlappingFileLockException | IOException e) {
            return false;
        }
    }

    /** Removes the directory of a dead instance. */
    void removeInstance(String name) {
        HostFiles.deleteTree(instanceDir(name));
    }

    /** Releases the instance: removes its directory and lets its name go. */
    @Override
    public void close() {
        try {
            HostFiles.deleteTree(dir);
        } finally {
            try {
                lockChannel.close();
            } catch (IOException ignored) {
                // the lock goes with the process anyway
            }
            LIVE_IN_THIS_PROCESS.remove(instance);
        }
    }
}
