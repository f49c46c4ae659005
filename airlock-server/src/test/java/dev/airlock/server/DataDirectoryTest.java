package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A data directory the server cannot use stops the start with the directory, the reason and the flag to change. */
class DataDirectoryTest {

    @Test
    void aRegularFileAsDataDirectoryStopsTheServerBeforeAnythingStarts() throws IOException {
        Path file = Files.createTempFile("airlock-data-", ".txt");
        try {
            assertThatThrownBy(() -> SandboxRuntime.open(ServerConfig.defaults().withDataDir(file)))
                    .isInstanceOf(AirlockException.class)
                    .hasMessage("cannot use " + file + " as the data directory: it exists and is not a directory; give --data-dir"
                            + " (or AIRLOCK_DATA_DIR) a directory the server may write, such as /var/lib/airlock");
        } finally {
            Files.deleteIfExists(file);
        }
    }

    /** The audit log and sandbox records are the owner's alone, in a new data directory and in one an earlier version left open. */
    @Test
    void theDatabaseIsReadableByItsOwnerOnly() throws IOException {
        Path dir = Files.createTempDirectory("airlock-data-");
        try {
            DataDirectory.prepare(dir);
            Path db = dir.resolve(ServerConfig.DATABASE);
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(db))).isEqualTo("rw-------");
            Files.setPosixFilePermissions(db, PosixFilePermissions.fromString("rw-r--r--"));
            DataDirectory.prepare(dir);
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(db))).isEqualTo("rw-------");
        } finally {
            HostFiles.deleteTree(dir);
        }
    }

    /** Root may write anywhere but on a read-only file system: a read-only tmpfs stands for one. */
    @Test
    void aDataDirectoryOnAReadOnlyFileSystemIsRefusedWithWhatToChange() throws Exception {
        Path dir = Files.createTempDirectory("airlock-ro-data-");
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", dir.toString()).inheritIO().start();
        assertThat(mount.waitFor(30, TimeUnit.SECONDS) && mount.exitValue() == 0).as("mounted a read-only tmpfs (needs root)").isTrue();
        try {
            assertThatThrownBy(() -> DataDirectory.prepare(dir))
                    .isInstanceOf(AirlockException.class)
                    .hasMessageStartingWith("cannot use " + dir + " as the data directory: this process may not write in it")
                    .hasMessageContaining("give --data-dir");
            assertThatThrownBy(() -> DataDirectory.prepare(dir.resolve("below")))
                    .hasMessageStartingWith("cannot use " + dir.resolve("below") + " as the data directory: it cannot be created");
        } finally {
            new ProcessBuilder("umount", dir.toString()).inheritIO().start().waitFor(30, TimeUnit.SECONDS);
            HostFiles.deleteTree(dir);
        }
    }
}
