package dev.airlock.oci;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageStore;
import dev.airlock.oci.image.TestArchives;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A hostile image: its {@code /workspace} and {@code /tmp} are absolute symbolic links to a path
 * that exists on the host too. Two layers stop it: the import replaces every link at a mount point
 * with a real directory ({@code ImageSkeleton}), and the runtime resolves each destination inside
 * the root (runc: securejoin; airlock-launch: {@code openat2} with {@code RESOLVE_IN_ROOT}), so the
 * sandbox's files land in its own tmpfs and the host's directory stays as it was, on either runtime.
 * This test shows the two together; {@link LauncherMountPointTest} the launcher's layer alone.
 */
class ImageSymlinkTest {

    static Path storeRoot;
    static Path hostTarget;

    @BeforeAll
    static void importImage() throws IOException {
        byte[] busybox = TestArchives.staticBusybox();
        storeRoot = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-images-test");
        Files.setAttribute(storeRoot, "unix:mode", 0711);
        // the same path on the host: what a runtime that followed the link out of the root would mount on
        hostTarget = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-symlink-target");
        Files.writeString(hostTarget.resolve("host-file"), "the host's\n");
        String inImage = hostTarget.toString().substring(1);
        byte[] layer = TestArchives.layer()
                .dir("bin", 0755).file("bin/busybox", 0755, busybox)
                .symlink("bin/sh", "/bin/busybox").symlink("bin/ls", "busybox").symlink("bin/touch", "busybox")
                .dir("var", 0755).dir("var/tmp", 01777).dir(inImage, 0755).dir(inImage + "/ws", 0755).dir(inImage + "/tmp", 0755)
                .symlink("workspace", "/" + inImage + "/ws").symlink("tmp", "/" + inImage + "/tmp")
                .bytes();
        ImageStore.at(storeRoot.resolve("images")).importArchive(TestArchives.dockerSave(storeRoot.resolve("hostile.tar"), List.of(layer)),
                "hostile");
    }

    @AfterAll
    static void removeAll() {
        if (storeRoot != null) {
            HostFiles.deleteTree(storeRoot);
        }
        if (hostTarget != null) {
            HostFiles.deleteTree(hostTarget);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"runc", Launcher.NAME})
    void aSymlinkedMountPointLeadsInsideTheImageNeverToTheHost(String runtime) throws IOException {
        OciDriverConfig config = OciDriverConfig.defaults().withRuntime(runtime).withImageRoot(storeRoot.resolve("images"));
        Engine engine = new Engine(new OciDriver(config));
        String prefix = "al-" + engine.driver().instance() + "-";
        try (Sandbox sb = engine.create(new SandboxSpec("hostile", null, Map.of()))) {
            ExecResult r = sb.exec(ExecRequest.of("/bin/sh", "-c", "touch /workspace/mine /tmp/mine && ls /workspace && ls /tmp")
                    .withTimeout(Duration.ofSeconds(30)));
            assertThat(r.exitCode()).as(r.stderrText()).isZero();
            assertThat(r.stdoutText()).as("each tmpfs is the sandbox's own, empty but for what it wrote").isEqualTo("mine\nmine\n");
        } finally {
            engine.close();
        }
        assertThat(new LeakCheck(config).find(prefix)).isEmpty();
        try (var left = Files.list(hostTarget)) {
            assertThat(left.map(p -> p.getFileName().toString()).toList()).containsExactly("host-file");
        }
    }
}
