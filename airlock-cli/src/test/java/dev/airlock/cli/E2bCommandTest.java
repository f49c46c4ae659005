package dev.airlock.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code airlock e2b env}: the three exports E2B's SDKs read, for a client's token. */
class E2bCommandTest {

    @Test
    void printsTheDoorAndTheKeyOfTheToken(@TempDir Path dir) throws Exception {
        Path token = dir.resolve("token");
        Files.writeString(token, "alk_3f9c0123456789abcdef0123456789ab\n");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
        CliProcess cli = CliProcess.run("e2b", "env", "--token-file", token.toString(), "--url", "http://127.0.0.1:8801/");
        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        assertThat(cli.stdout().lines()).containsExactly("export E2B_API_URL=http://127.0.0.1:8801", "export E2B_SANDBOX_URL=http://127.0.0.1:8801",
                "export E2B_API_KEY=e2b_3f9c0123456789abcdef0123456789ab");
    }

    @Test
    void aTokenFileOthersMayReadIsRefused(@TempDir Path dir) throws Exception {
        Path token = dir.resolve("token");
        Files.writeString(token, "alk_3f9c0123456789abcdef0123456789ab\n");
        Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-r--r--"));
        CliProcess cli = CliProcess.run("e2b", "env", "--token-file", token.toString());
        assertThat(cli.exitCode()).isNotZero();
        assertThat(cli.stdout()).isEmpty();
        assertThat(cli.stderr()).contains(token.toString());
    }
}
