package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EngineInstance;
import dev.airlock.core.SandboxBroker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * How the OCI driver lays out an instance's directory ({@link EngineInstance}: its name, locks and
 * {@code <root>/engines/<instance>/}): on the instance's own tmpfs ({@link InstanceTmpfs}), the
 * shared image root and one bundle directory per sandbox, under a root every sandbox can reach.
 *
 * <p>Directories are mode 0711: the sandbox's mapped root must traverse them to reach its bundle,
 * but no other host user may list them.
 */
final class StateDirectory {

    /** A unix socket's path holds at most this many bytes (sun_path, less its terminating NUL). */
    private static final int UNIX_SOCKET_PATH_MAX = 107;
    /** The longest path of a socket below the root: a sandbox's bridge socket (longer than agent.sock), its id at full length. */
    private static final String LONGEST_SOCKET_BELOW_ROOT = "/engines/" + "i".repeat(EngineInstance.NAME_LENGTH) + "/sandboxes/al-"
            + "i".repeat(EngineInstance.NAME_LENGTH) + "-" + "0".repeat(16) + "/run/" + SandboxBroker.BRIDGE_SOCKET;
    /** The longest state root (in bytes) under which every sandbox's sockets can still be bound. */
    static final int MAX_ROOT_BYTES = UNIX_SOCKET_PATH_MAX - LONGEST_SOCKET_BELOW_ROOT.length();
    private static final String MODE = "rwx--x--x";
    /** The instance's own tmpfs, mounted on its directory before anything is made in it. */
    private static final EngineInstance.Directory ON_ITS_TMPFS = new EngineInstance.Directory() {
        @Override
        public void prepare(Path dir) throws IOException {
            InstanceTmpfs.mount(dir);
        }

        @Override
        public void dispose(Path dir) {
            InstanceTmpfs.unmount(dir);
        }
    };

    private StateDirectory() {
    }

    /** Starts an OCI driver instance under {@code root}: its directory on its own tmpfs, its locks. */
    static EngineInstance create(Path root) {
        requireShortEnough(root);
        try {
            createTraversable(root);
            requireSearchableByOthers(root);
            return EngineInstance.create(root, MODE, ON_ITS_TMPFS);
        } catch (IOException e) {
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

    static void createTraversable(Path dir) throws IOException {
        EngineInstance.createDirectory(dir, PosixFilePermissions.fromString(MODE));
    }

    /** The shared image root of an instance: the system image's files and the agent. */
    static Path imageRoot(EngineInstance instance) {
        return instance.dir().resolve("rootfs");
    }
}
