package dev.airlock.agent;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;

/** The launcher is placed under its own SHA-256, host root's alone, and a copy already there is used as it is. */
class AgentBinaryTest {

    @Test
    void theLauncherIsNamedByItsDigestAndPlacedOnce(@TempDir Path dir) throws Exception {
        Path placed = AgentBinary.installLauncherTo(dir);
        byte[] program = Files.readAllBytes(placed);
        String digest = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(program));
        assertThat(placed.getFileName()).hasToString("airlock-launch-" + digest.substring(0, 16));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(placed))).isEqualTo("rwx------");

        FileTime old = FileTime.fromMillis(1_000_000_000L);
        Files.setLastModifiedTime(placed, old);
        assertThat(AgentBinary.installLauncherTo(dir)).isEqualTo(placed);
        assertThat(Files.getLastModifiedTime(placed)).as("not written again").isEqualTo(old);
        try (var files = Files.list(dir)) {
            assertThat(files.toList()).containsExactly(placed);
        }
    }
}
