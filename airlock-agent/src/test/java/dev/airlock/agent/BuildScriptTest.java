package dev.airlock.agent;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * src/main/c/build.sh builds the in-sandbox programs the same way whatever else the host has: a
 * {@code musl-gcc} on the path (musl-tools installed) once made it fail on the launcher, whose
 * kernel headers musl-gcc does not see.
 */
class BuildScriptTest {

    private static final Path C = Path.of("src/main/c").toAbsolutePath();

    @Test
    void aMuslGccOnThePathChangesNothing(@TempDir Path dir) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path musl = bin.resolve("musl-gcc");
        // a musl-gcc that cannot compile what needs kernel headers, as the real one cannot
        Files.writeString(musl, "#!/bin/sh\necho 'fatal error: linux/capability.h: No such file or directory' >&2\nexit 1\n");
        Files.setPosixFilePermissions(musl, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path out = dir.resolve("out/airlock-launch");
        ProcessBuilder pb = new ProcessBuilder(List.of("sh", C.resolve("build.sh").toString(), out.toString(), C.resolve("launch.c").toString()))
                .redirectErrorStream(true);
        pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(log).isZero();
        assertThat(Files.isExecutable(out)).isTrue();
        assertThat(Files.readString(dir.resolve("out/airlock-launch.sha256")).strip()).hasSize(64);
    }
}
