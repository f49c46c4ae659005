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
 * src/main/c/build.sh: the agent against musl, the launcher with cc whatever else the host has (a
 * {@code musl-gcc} on the path once made it fail on the launcher, whose kernel headers musl-gcc does
 * not see), and never the agent with another compiler than musl's behind the caller's back.
 */
class BuildScriptTest {

    private static final Path C = Path.of("src/main/c").toAbsolutePath();

    @Test
    void theLauncherIsBuiltWithCcWhateverMuslGccDoes(@TempDir Path dir) throws Exception {
        Build build = build(dir, "launch.c", "airlock-launch");
        assertThat(build.status()).as(build.log()).isZero();
        assertThat(Files.isExecutable(build.out())).isTrue();
        assertThat(Files.readString(build.out().resolveSibling("airlock-launch.sha256")).strip()).hasSize(64);
    }

    @Test
    void theAgentIsBuiltWithMuslGccOrNotAtAll(@TempDir Path dir) throws Exception {
        Build build = build(dir, "agent.c", "airlock-agent");
        assertThat(build.status()).as("the stand-in musl-gcc fails, and cc is not used instead").isNotZero();
        assertThat(build.log()).contains("compiling").contains("musl-gcc");
        assertThat(build.out()).doesNotExist();
    }

    private record Build(int status, String log, Path out) {
    }

    /** build.sh of {@code source} into {@code dir}, with a stand-in musl-gcc first on the path that fails as the real one does on kernel headers. */
    private static Build build(Path dir, String source, String name) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path musl = bin.resolve("musl-gcc");
        Files.writeString(musl, "#!/bin/sh\necho 'fatal error: linux/capability.h: No such file or directory' >&2\nexit 1\n");
        Files.setPosixFilePermissions(musl, PosixFilePermissions.fromString("rwxr-xr-x"));
        Path out = dir.resolve("out").resolve(name);
        ProcessBuilder pb = new ProcessBuilder(List.of("sh", C.resolve("build.sh").toString(), out.toString(), C.resolve(source).toString()))
                .redirectErrorStream(true);
        pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
        Process p = pb.start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        return new Build(p.exitValue(), log, out);
    }
}
