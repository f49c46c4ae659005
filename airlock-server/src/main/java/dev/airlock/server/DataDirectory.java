package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.server.config.ServerConfig;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * The server's data directory (token, state database, outputs), checked once at start, so a
 * directory the server cannot use stops it with one sentence that says what to change, instead of
 * a bare exception from whichever file happens to be written first.
 */
final class DataDirectory {

    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");

    private DataDirectory() {
    }

    /** Creates {@code dir} if missing and makes sure this process may write in it. */
    static void prepare(Path dir) {
        try {
            Files.createDirectories(dir);
        } catch (FileAlreadyExistsException e) {
            throw refused(dir, "it exists and is not a directory");
        } catch (IOException e) {
            throw refused(dir, "it cannot be created (" + e.getMessage() + ")");
        }
        if (!Files.isWritable(dir)) {
            throw refused(dir, "this process may not write in it (a read-only file system, or its owner and mode)");
        }
        restrictDatabase(dir.resolve(ServerConfig.DATABASE));
    }

    /**
     * Makes the database (audit log, sandbox records) readable by its owner only, before SQLite
     * opens it: SQLite gives the journal files it makes the database's mode, and a new database
     * would otherwise get the umask's (world-readable).
     */
    private static void restrictDatabase(Path db) {
        try {
            if (Files.notExists(db, LinkOption.NOFOLLOW_LINKS)) {
                Files.createFile(db, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
            }
            Files.setPosixFilePermissions(db, OWNER_ONLY);
        } catch (IOException e) {
            throw refused(db.getParent(), "its database " + db.getFileName() + " cannot be made private to this user (" + e.getMessage() + ")");
        }
    }

    private static AirlockException refused(Path dir, String why) {
        return AirlockException.unavailable("cannot use " + dir + " as the data directory: " + why
                + "; give --data-dir (or AIRLOCK_DATA_DIR) a directory the server may write, such as /var/lib/airlock");
    }
}
