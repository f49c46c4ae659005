package dev.airlock.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * One driver instance's life on the host, the same for every driver: a random name, the directory
 * {@code <root>/engines/<name>/} with a lock file held for the instance's whole life, and a lock in
 * the host-wide registry {@link #HOST_REGISTRY}. An instance whose locks can be taken is dead, and
 * everything of it is an orphan for any engine to reap.
 *
 * <p>Two locks because sandboxes and their traces (runtime state, cgroups, QEMU processes) are
 * host-wide while state roots are not: an engine on another state root (verify's scenarios, tests, a
 * second server) must never take a live instance for dead. The registry is written first, so an
 * instance that is still making its directory already counts as alive.
 */
public final class EngineInstance implements AutoCloseable {

    /** Where every instance on the host holds a lock, whatever its driver and state root. */
    public static final Path HOST_REGISTRY = Path.of("/run/airlock-instances");
    /** The length of an instance's name (lower-case letters and digits), part of every sandbox id. */
    public static final int NAME_LENGTH = 8;
    /** Registry entries looked at when pruning the dead ones at a start; the rest wait for later starts. */
    private static final int REGISTRY_PRUNE_MAX = 10_000;
    /** Instances alive in this JVM: POSIX locks are per process, so they cannot tell us. */
    private static final Set<String> LIVE_IN_THIS_PROCESS = ConcurrentHashMap.newKeySet();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final Logger LOG = LoggerFactory.getLogger(EngineInstance.class);

    /** What a driver adds to an instance's directory: made before the lock is taken, undone when it is removed. */
    public interface Directory {

        /** Makes the driver's own parts of a new instance's directory (which exists, with its mode). */
        void prepare(Path dir) throws IOException;

        /** Undoes {@link #prepare} before the directory is deleted: for a live instance at its close, or a dead one at a reap. */
        void dispose(Path dir);
    }

    private final Path root;
    private final String name;
    private final Path dir;
    private final Set<PosixFilePermission> mode;
    private final Directory driverParts;
    private final FileChannel lockChannel;
    /** The lock in {@link #HOST_REGISTRY}; null where that could not be made (the state-root lock still holds). */
    private final FileChannel registryChannel;

    private EngineInstance(Path root, String name, Set<PosixFilePermission> mode, Directory driverParts, FileChannel lockChannel,
                           FileChannel registryChannel) {
        this.root = root;
        this.name = name;
        this.dir = root.resolve("engines").resolve(name);
        this.mode = mode;
        this.driverParts = driverParts;
        this.lockChannel = lockChannel;
        this.registryChannel = registryChannel;
    }

    /**
     * Starts a new instance under {@code root}: registers it host-wide, makes {@code engines/<name>/}
     * and its {@code sandboxes/} with {@code mode}, lets the driver add its parts, then takes the lock.
     *
     * @throws IOException when the directory or the lock cannot be made (nothing of the instance is left)
     */
    public static EngineInstance create(Path root, String mode, Directory driverParts) throws IOException {
        Set<PosixFilePermission> permissions = PosixFilePermissions.fromString(mode);
        String name = newName();
        Path dir = root.resolve("engines").resolve(name);
        // registered before its directory exists: until its lock below is taken, the registry is what
        // tells another engine's reaper that this instance is starting, not dead
        LIVE_IN_THIS_PROCESS.add(name);
        FileChannel registryChannel = register(name);
        FileChannel lock = null;
        try {
            createDirectory(root.resolve("engines"), permissions);
            createDirectory(dir, permissions);
            driverParts.prepare(dir);
            createDirectory(dir.resolve("sandboxes"), permissions);
            lock = FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            if (lock.tryLock() == null) {
                throw new IOException("the lock of new instance " + name + " is already held");
            }
            return new EngineInstance(root, name, permissions, driverParts, lock, registryChannel);
        } catch (IOException | RuntimeException e) {
            if (lock != null) {
                lock.close();
            }
            driverParts.dispose(dir);
            HostFiles.deleteTree(dir);
            unregister(name, registryChannel);
            LIVE_IN_THIS_PROCESS.remove(name);
            throw e;
        }
    }

    private static String newName() {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < NAME_LENGTH; i++) {
            sb.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
        }
        return sb.toString();
    }

    /** Makes {@code dir} (and its parents) and sets its mode, whatever the umask. */
    public static void createDirectory(Path dir, Set<PosixFilePermission> mode) throws IOException {
        if (!Files.isDirectory(dir)) {
            Files.createDirectories(dir);
        }
        Files.setPosixFilePermissions(dir, mode);
    }

    /** Makes {@code dir} with the mode of this instance's directories. */
    public void createDirectory(Path dir) throws IOException {
        createDirectory(dir, mode);
    }

    public String name() {
        return name;
    }

    /** {@code <root>/engines/<name>}. */
    public Path dir() {
        return dir;
    }

    /** The directory of the instance {@code other} under this root, alive or not. */
    public Path instanceDir(String other) {
        return root.resolve("engines").resolve(other);
    }

    /** The directory of sandbox {@code id} of this instance. */
    public Path sandboxDir(String id) {
        return dir.resolve("sandboxes").resolve(id);
    }

    /**
     * Names of instances under this root, other than those of this process, that are no longer
     * alive: neither their lock in the state root nor their lock in the host registry is held (one
     * that is starting holds only the second). Taking a lock is what tells it is free; it is
     * released again at once.
     */
    public List<String> deadInstances() {
        List<String> dead = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(root.resolve("engines"))) {
            for (Path entry : entries) {
                String other = entry.getFileName().toString();
                if (!LIVE_IN_THIS_PROCESS.contains(other) && Files.isDirectory(entry) && !isAlive(other)) {
                    dead.add(other);
                }
            }
        } catch (IOException e) {
            return dead;
        }
        return dead;
    }

    /** Whether the instance {@code other} under this root is alive, in any process. */
    public boolean isAlive(String other) {
        return isAlive(root, other);
    }

    /** Whether the instance {@code name} under the state root {@code root} is alive, in any process. */
    public static boolean isAlive(Path root, String name) {
        if (LIVE_IN_THIS_PROCESS.contains(name)) {
            return true;
        }
        Path registered = HOST_REGISTRY.resolve(name);
        if (Files.exists(registered) && !isFree(registered)) {
            return true;
        }
        Path lock = root.resolve("engines").resolve(name).resolve("lock");
        return Files.exists(lock) && !isFree(lock);
    }

    /** Removes the directory of the dead instance {@code other} (with the driver's parts of it). */
    public void removeInstance(String other) {
        Path otherDir = instanceDir(other);
        driverParts.dispose(otherDir);
        HostFiles.deleteTree(otherDir);
    }

    /**
     * Takes {@code name}'s lock in the host registry, first removing the entries of instances that
     * died without removing theirs; null when the registry cannot be written (then only the state
     * root tells this instance alive).
     */
    private static FileChannel register(String name) {
        try {
            createDirectory(HOST_REGISTRY, PosixFilePermissions.fromString("rwx------"));
            try (Stream<Path> entries = Files.list(HOST_REGISTRY)) {
                entries.limit(REGISTRY_PRUNE_MAX).filter(e -> !LIVE_IN_THIS_PROCESS.contains(e.getFileName().toString()) && isFree(e))
                        .forEach(e -> {
                            try {
                                Files.deleteIfExists(e);
                            } catch (IOException ignored) {
                                // another engine removed it first
                            }
                        });
            }
            FileChannel channel = FileChannel.open(HOST_REGISTRY.resolve(name), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            if (channel.tryLock() == null) {
                channel.close();
                return null;
            }
            return channel;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Removes {@code name}'s entry from the host registry and lets its lock go ({@code channel} null: it has none). */
    private static void unregister(String name, FileChannel channel) {
        if (channel == null) {
            return;
        }
        try {
            Files.deleteIfExists(HOST_REGISTRY.resolve(name));
            channel.close();
        } catch (IOException ignored) {
            // the lock goes with the process anyway
        }
    }

    /** Whether nobody holds the lock of {@code lockFile} (a missing file holds none). */
    private static boolean isFree(Path lockFile) {
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

    /**
     * The end of a driver, the same for every driver: destroys each sandbox still {@code live} (one
     * that fails is logged and the rest go on), then {@link #close()}s the instance.
     */
    public void closeAfterDestroying(Collection<? extends IsolationDriver.DriverSandbox> live) {
        try {
            for (IsolationDriver.DriverSandbox sandbox : List.copyOf(live)) {
                try {
                    sandbox.destroy();
                } catch (RuntimeException e) {
                    LOG.warn("could not destroy sandbox {}: {}", sandbox.id(), e.getMessage());
                }
            }
        } finally {
            close();
        }
    }

    /**
     * The last step of every driver's reap: for each instance under this root that is dead,
     * {@code beforeRemoval} (what the driver keeps of it outside the directory, such as host id
     * ranges), then its directory. Returns what was reaped, a line each.
     */
    public List<String> removeDeadInstances(Function<String, List<String>> beforeRemoval) {
        List<String> reaped = new ArrayList<>();
        for (String dead : deadInstances()) {
            reaped.addAll(beforeRemoval.apply(dead));
            removeInstance(dead);
            reaped.add("state of instance " + dead);
        }
        return reaped;
    }

    /** Ends the instance: removes its directory (with the driver's parts), then lets its locks and its name go. */
    @Override
    public void close() {
        try {
            driverParts.dispose(dir);
            HostFiles.deleteTree(dir);
        } finally {
            try {
                lockChannel.close();
            } catch (IOException ignored) {
                // the lock goes with the process anyway
            }
            unregister(name, registryChannel);
            LIVE_IN_THIS_PROCESS.remove(name);
        }
    }
}
