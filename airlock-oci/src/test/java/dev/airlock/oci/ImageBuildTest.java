package dev.airlock.oci;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecResult;
import dev.airlock.core.ImageInfo;
import dev.airlock.core.Language;
import dev.airlock.core.RunRequest;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageBuilder;
import dev.airlock.oci.image.ImageStore;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * A real image built with mmdebstrap (minbase plus python3-minimal, from this host's apt sources)
 * and a sandbox of it running Python. Downloaded packages are kept in a cache under /var/tmp, so a
 * second run of the suite downloads nothing; the first takes minutes on a slow mirror.
 */
class ImageBuildTest {

    private static final Path PACKAGE_CACHE = Path.of("/var/tmp/airlock-test-debs");

    @Test
    void aBuiltImageRunsPython() throws IOException {
        assumeThat(Files.isExecutable(Path.of("/usr/bin/mmdebstrap"))).as("mmdebstrap installed (bin/test installs it)").isTrue();
        Path dir = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-build-test");
        Files.setAttribute(dir, "unix:mode", 0711);
        OciDriverConfig config = OciDriverConfig.defaults().withImageRoot(dir.resolve("images"));
        try {
            ImageStore store = ImageStore.at(config.imageRoot());
            long start = System.nanoTime();
            ImageInfo info = new ImageBuilder(store, Duration.ofMinutes(20), PACKAGE_CACHE)
                    .build("py", List.of("python3-minimal"), null, dir.resolve("build.log"));
            System.out.printf("built %s in %d s: %d MiB in %d files%n", info.digest(), (System.nanoTime() - start) / 1_000_000_000,
                    info.sizeBytes() >> 20, info.files());
            assertThat(info.source()).startsWith("mmdebstrap ").contains("python3-minimal");
            Path root = store.rootOf("py");
            assertThat(root.resolve("etc/passwd")).content().contains("sandbox:x:1000");
            try (var dev = Files.walk(root.resolve("dev"))) {
                assertThat(dev.filter(p -> !Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS) && !Files.isSymbolicLink(p)))
                        .as("mmdebstrap's device nodes were dropped").isEmpty();
            }
            assertThat(root.resolve("var/cache/apt/archives")).isDirectory();
            try (var debs = Files.list(root.resolve("var/cache/apt/archives"))) {
                assertThat(debs.filter(p -> p.toString().endsWith(".deb"))).as("no cached package in the image").isEmpty();
            }

            try (Engine engine = new Engine(new OciDriver(config))) {
                long t = System.nanoTime();
                ExecResult r = engine.run(new RunRequest(Language.PYTHON, "import sys; print(6 * 7, sys.version_info[0])", null,
                        new SandboxSpec("py", null, Map.of()))).result();
                System.out.printf("one-shot run in the built image: %d ms%n", (System.nanoTime() - t) / 1_000_000);
                assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("42 3\n");
            }
        } finally {
            dev.airlock.core.HostFiles.deleteTree(dir);
        }
    }
}
