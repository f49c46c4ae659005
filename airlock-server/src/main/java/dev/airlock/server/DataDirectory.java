package dev.airlock.server;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The server's data directory (token, state database, outputs), checked once at start, so a
 * directory the server cannot use stops it with one sentence that says what to change, instead of
 * a bare exception from whichever file happens to be written first.
 */
final class DataDirectory {

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
    }

    private static AirlockException refused(Path dir, String why) {
        return AirlockException.unavailable("cannot use " + dir + " as the data directory: " + why
                + "; give --data-dir (or AIRLOCK_DATA_DIR) a directory the server may write, such as /var/lib/airlock");
    }
}
