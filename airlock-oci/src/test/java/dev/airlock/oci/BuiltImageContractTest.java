package dev.airlock.oci;

import dev.airlock.core.HostFiles;
import dev.airlock.core.ImageInfo;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageBuilder;
import dev.airlock.oci.image.ImageStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The driver contract's concerns that depend on the sandbox's root file system, on runc with every
 * sandbox made from an image built with mmdebstrap (bookworm minbase plus python3, procps and
 * ca-certificates: the standard library, ps and free, and /etc/ssl/certs that the hostile cases
 * use) instead of {@code system}: a built image's root must hold as well as the host's /usr does
 * (its files shared read-only, its /etc synthesized, nothing of the host in it, no set-id bit).
 * The concerns that do not depend on the image (system call filter, limits, network, the egress
 * bridge, other sandboxes) run on {@code system} in {@link RuncContractTest}.
 *
 * <p>Cost, on this project's shared 2-core host while other builds loaded it: the build (packages
 * from ImageBuildTest's cache under /var/tmp, so only the first run downloads, about 15 MiB) took
 * 167 to 350 s, most of it dpkg; the six concerns about 65 s (about what they take on {@code
 * system}). In all it adds 4 to 7 minutes to the suite.
 *
 * <p>In the full lane ({@code bin/test --full}): the fast lane runs the whole contract on runc with the
 * {@code system} image (RuncContractTest) and builds an image and runs a sandbox of it (ImageBuildTest).
 */
@Tag("full")
class BuiltImageContractTest extends OciDriverContract {

    private static final Path PACKAGE_CACHE = Path.of("/var/tmp/airlock-test-debs");
    private static final Path STORE_DIR = storeDir();

    BuiltImageContractTest() {
        super(OciDriverConfig.defaults().withRuntime("runc").withImageRoot(STORE_DIR.resolve("images")));
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/mmdebstrap")), "mmdebstrap installed (bin/test installs it)");
        long start = System.nanoTime();
        ImageInfo info;
        try {
            info = new ImageBuilder(ImageStore.at(STORE_DIR.resolve("images")), Duration.ofMinutes(20), PACKAGE_CACHE)
                    .build("contract", List.of("python3", "procps", "ca-certificates"), null, STORE_DIR.resolve("build.log"));
        } catch (RuntimeException | Error e) {
            HostFiles.deleteTree(STORE_DIR);
            throw e;
        }
        System.out.printf("built the contract's image in %d s: %d MiB in %d files%n", (System.nanoTime() - start) / 1_000_000_000,
                info.sizeBytes() >> 20, info.files());
    }

    private static Path storeDir() {
        try {
            Path dir = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-contract-image");
            Files.setAttribute(dir, "unix:mode", 0711);
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The concerns whose outcome depends on what the root file system holds. */
    private static final Set<String> ROOT_FILE_SYSTEM_CONCERNS = Set.of("FilesystemIsolation", "InputsIsolation", "ProcessIsolation",
            "Privilege", "HostInformation", "EngineLifecycle");

    @Override
    protected boolean runs(Class<?> concern) {
        return ROOT_FILE_SYSTEM_CONCERNS.contains(concern.getSimpleName());
    }

    @Override
    protected SandboxSpec sandboxSpec() {
        return SandboxSpec.defaults().withImage("contract");
    }

    @AfterAll
    void removeImage() {
        HostFiles.deleteTree(STORE_DIR);
    }
}
