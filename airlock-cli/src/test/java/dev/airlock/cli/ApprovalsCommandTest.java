package dev.airlock.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code airlock approvals} without a server to talk to: one sentence that says what is missing and what to give. */
class ApprovalsCommandTest {

    @Test
    void aMissingTokenFileSaysTheServerMakesIt(@TempDir Path dir) throws Exception {
        CliProcess cli = CliProcess.run("approvals", "list", "--token-file", dir.resolve("token").toString());
        assertThat(cli.exitCode()).isNotZero();
        assertThat(cli.stderr()).isEqualTo("airlock: there is no token file at " + dir.resolve("token") + ": the server makes it when"
                + " it first starts with that data directory; start it, or name the token file of the server you mean\n");
    }

    @Test
    void aServerThatIsNotThereIsConnectionRefusedNotNull(@TempDir Path dir) throws Exception {
        Path token = dir.resolve("token");
        Files.writeString(token, "alk_" + "x".repeat(40));
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort(); // closed again: nothing listens there
        }
        CliProcess cli = CliProcess.run("approvals", "list", "--url", "http://127.0.0.1:" + port, "--token-file", token.toString());
        assertThat(cli.exitCode()).isNotZero();
        assertThat(cli.stderr()).startsWith("airlock: cannot reach the server at http://127.0.0.1:" + port + ": connection refused")
                .doesNotContain("null");
    }
}
