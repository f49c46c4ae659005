package dev.airlock.oci;

import dev.airlock.core.HostFiles;

import dev.airlock.core.AirlockException;
import dev.airlock.core.SandboxBroker;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The host directories of one driver instance, {@code <root>/engines/<instance>/}: the shared image
 * root, one bundle directory per sandbox, and a lock file held for the instance's whole life. An
 * instance whose lock can be taken is dead, and everything under its directory is an orphan.
 *
 * <p>Directories are mode 0711: the sandbox's mapped root must traverse them to reach its bundle,
 * but no other host user may list them.
 */
final class StateDirectory implements AutoCloseable {

    /**
     * Where every instance on the host also holds a lock, whatever its state root: runtime state
     * and cgroups are host-wide, so an engine on another state root (verify's scenarios, tests)
     * must never take a live instance for dead and reap its sandboxes.
     */
    static final Path HOST_REGISTRY = Path.of("/run/airlock-instances");
    /** Instances alive in this JVM: POSIX locks are per process, so they cannot tell us. */
    private static final Set<String> LIVE_IN_THIS_PROCESS = ConcurrentHashMap.newKeySet();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int INSTANCE_NAME_LENGTH = 8;
    /** A unix socket's path holds at most this many bytes (sun_path, less its terminating NUL). */
    private static final int UNIX_SOCKET_PATH_MAX = 107;
    /** The longest path of a socket below the root: a sandbox's bridge socket (longer than agent.sock), its id at full length. */
    private static final String LONGEST_SOCKET_BELOW_ROOT = "/engines/" + "i".repeat(INSTANCE_NAME_LENGTH) + "/sandboxes/al-"
            + "i".repeat(INSTANCE_NAME_LENGTH) + "-" + "0".repeat(16) + "/run/" + SandboxBroker.BRIDGE_SOCKET;
    /** The longest state root (in bytes) under which every sandbox's sockets can still be bound. */
    static final int MAX_ROOT_BYTES = UNIX_SOCKET_PATH_MAX - LONGEST_SOCKET_BELOW_ROOT.length();

    private final Path root;
    private final String instance;
    private final Path dir;
    private final FileChannel lockChannel;
    /** This instance's lock in {@link #HOST_REGISTRY}; null where that could not be made (the state-root lock still holds). */
    private final FileChannel registryChannel;

    private StateDirectory(Path root, String instance, Path dir, FileChannel lockChannel, FileChannel registryChannel) {
        this.root = root;
        this.instance = instance;
        this.dir = dir;
        this.lockChannel = lockChannel;
        this.registryChannel = registryChannel;
    }

    static StateDirectory create(Path root) {
        requireShortEnough(root);
        String instance = newInstanceName();
        Path dir = root.resolve("engines").resolve(instance);
        // Registered before its directory exists: until its lock below is taken, the registry is what
        // tells another engine's reaper that this instance is starting, not dead.
        LIVE_IN_THIS_PROCESS.add(instance);
        FileChannel registryChannel = register(instance);
        try {
            createTraversable(root);
            requireSearchableByOthers(root);
            createTraversable(root.resolve("engines"));
            createTraversable(dir);
            InstanceTmpfs.mount(dir);
            createTraversable(dir.resolve("sandboxes"));
            FileChannel channel = FileChannel.open(dir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            if (channel.tryLock() == null) {
                channel.close();
                throw new IOException("lock of new instance " + instance + " is already held");
            }
            return new StateDirectory(root, instance, dir, channel, registryChannel);
        } catch (IOException | RuntimeException e) {
            InstanceTmpfs.unmount(dir);
            HostFiles.deleteTree(dir);
            unregister(instance, registryChannel);
            LIVE_IN_THIS_PROCESS.remove(instance);
            if (e instanceof RuntimeException re) {
                throw re;
            }
            throw AirlockException.unavailable("cannot create Airlock's state directory under " + root + ": " + e.getMessage()
                    + " (Airlock needs root, or a state directory it may write)");
        }
    }

    /**
     * Refuses a root that sandboxes cannot reach. Each sandbox's runtime sets up its root file system
     * as the sandbox's own host id (above the host id base), which owns no host directory and is in
     * no host group: it passes a directory only through the "others" search bit. Without this check
     * a state directory under a 0700 home fails later, at every create, with the runtime's bare
     * "permission denied".
     */
    static void requireSearchableByOthers(Path root) throws IOException {
        for (Path dir = root.toRealPath(); dir != null; dir = dir.getParent()) {
            Set<PosixFilePermission> mode = Files.getPosixFilePermissions(dir);
            if (!mode.contains(PosixFilePermission.OTHERS_EXECUTE)) {
                String shown = dir.equals(root.toRealPath()) ? "" : " (a parent of it)";
                throw AirlockException.unavailable("cannot use " + root + " as the state directory: " + dir + shown + " is mode "
                        + PosixFilePermissions.toString(mode) + ", so sandboxes, which run as host ids of their own, cannot pass"
                        + " it to reach their root file system; allow others to search it (chmod o+x " + dir + ") or choose a"
                        + " --state-dir whose every parent others may search, such as /run/airlock");
            }
        }
    }

    private static void requireShortEnough(Path root) {
        int bytes = root.toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_ROOT_BYTES) {
            throw AirlockException.unavailable("cannot use " + root + " as the state directory: its path is " + bytes
                    + " bytes long and each sandbox's unix sockets lie " + LONGEST_SOCKET_BELOW_ROOT.length() + " bytes below it,"
                    + " past the kernel's limit of " + UNIX_SOCKET_PATH_MAX + "; choose a --state-dir of at most " + MAX_ROOT_BYTES
                    + " bytes, such as /run/airlock");
        }
    }

    private static String newInstanceName() {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < INSTANCE_NAME_LENGTH; i++) {
            sb.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
        }
        return sb.toString();
    }

    static void createTraversable(Path dir) throws IOException {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
    }

    String instance() {
        return instance;
    }

    Path imageRoot() {
        return dir.resolve("rootfs");
    }

    Path sandboxDir(String id) {
        return dir.resolve("sandboxes").resolve(id);
    }

    /**
     * Names of instances, other than this one, that are no longer alive: neither their lock in the
     * state root nor their lock in the host registry is held (one that is starting holds only the
     * second). Taking a lock is what tells it is free; it is released again at once.
     */
    List<String> deadInstances() {
        List<String> dead = new ArrayList<>();
        Path engines = root.resolve("engines");
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(engines)) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                if (LIVE_IN_THIS_PROCESS.contains(name) || !Files.isDirectory(entry)) {
                    continue;
                }
                if (!isAlive(root, name)) {
                    dead.add(name);
                }
            }
        } catch (IOException e) {
            return dead;
        }
        return dead;
    }

    /** Whether the instance named {@code name} still holds its lock. */
    boolean isAlive(String name) {
        return isAlive(root, name);
    }

    /** Whether the instance {@code name} under the state root {@code root} is alive, in any process. */
    static boolean isAlive(Path root, String name) {
        if (LIVE_IN_THIS_PROCESS.contains(name)) {
            return true;
        }
        Path registered = HOST_REGISTRY.resolve(name);
        if (Files.exists(registered) && !isDead(registered)) {
            return true;
        }
        Path lock = root.resolve("engines").resolve(name).resolve("lock");
        return Files.exists(lock) && !isDead(lock);
    }

    /**
     * Takes {@code instance}'s lock in the host registry, first removing the entries of instances
     * that died without removing theirs; null when the registry cannot be written (then only the
     * state root tells this instance alive).
     */
    private static FileChannel register(String instance) {
        try {
            Files.createDirectories(HOST_REGISTRY);
            Files.setPosixFilePermissions(HOST_REGISTRY, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
            try (java.util.stream.Stream<Path> entries = Files.list(HOST_REGISTRY)) {
                entries.limit(10_000).filter(e -> !LIVE_IN_THIS_PROCESS.contains(e.getFileName().toString()) && isDead(e))
                        .forEach(e -> {
                            try {
                                Files.deleteIfExists(e);
                            } catch (IOException ignored) {
                                // another engine removed it first
                            }
                        });
            }
            FileChannel channel = FileChannel.open(HOST_REGISTRY.resolve(instance), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            if (channel.tryLock() == null) {
                channel.close();
                return null;
            }
            return channel;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** Removes {@code instance}'s entry from the host registry and lets its lock go ({@code channel} null: it has none). */
    private static void unregister(String instance, FileChannel channel) {
        if (channel == null) {
            return;
        }
        try {
            Files.deleteIfExists(HOST_REGISTRY.resolve(instance));
            channel.close();
        } catch (IOException ignored) {
            // the lock goes with the process anyway
        }
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
        } catch (OverlappingFileLockException e) {
            return false;
        } catch (IOException e) {
            return false;
        }
    }

    /** Removes the directory of a dead instance, and its tmpfs. */
    void removeInstance(String name) {
        Path instanceDir = root.resolve("engines").resolve(name);
        InstanceTmpfs.unmount(instanceDir);
        HostFiles.deleteTree(instanceDir);
    }

    /** Releases the instance: removes its directory and lets its name go. */
    @Override
    public void close() {
        try {
            InstanceTmpfs.unmount(dir);
            HostFiles.deleteTree(dir);
        } finally {
            try {
                lockChannel.close();
            } catch (IOException ignored) {
                // the lock goes with the process anyway
            }
            unregister(instance, registryChannel);
            LIVE_IN_THIS_PROCESS.remove(instance);
        }
    }
}
