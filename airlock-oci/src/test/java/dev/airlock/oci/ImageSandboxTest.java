package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.ImageInfo;
import dev.airlock.oci.image.ImageStore;
import dev.airlock.oci.image.TestArchives;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * A sandbox on runc whose root is an image the test imported itself: busybox-static as /bin/sh and
 * a script of its own, shared read-only, with the sandbox's own /tmp and /workspace, the agent
 * mounted in, and the image held (rm refused) while the sandbox lives.
 */
class ImageSandboxTest {

    static Path storeRoot;
    static OciDriverConfig config;
    static Engine engine;

    @BeforeAll
    static void openEngine() throws IOException {
        TestArchives.staticBusybox();
        storeRoot = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-images-test");
        Files.setAttribute(storeRoot, "unix:mode", 0711);
        config = OciDriverConfig.defaults().withImageRoot(storeRoot.resolve("images"));
        engine = new Engine(new OciDriver(config));
    }

    @AfterAll
    static void closeEngine() {
        if (engine == null) {
            return;
        }
        String prefix = "al-" + engine.driver().instance() + "-";
        engine.close();
        dev.airlock.core.HostFiles.deleteTree(storeRoot);
        assertThat(new LeakCheck(config).find(prefix)).as("leftovers of this test class's sandboxes").isEmpty();
    }

    private static ExecResult sh(Sandbox sb, String line) {
        return sb.exec(ExecRequest.of("/bin/sh", "-c", line).withTimeout(Duration.ofSeconds(30)));
    }

    private static long createMillis(SandboxSpec spec) {
        long t = System.nanoTime();
        try (Sandbox sb = engine.create(spec)) {
            sh(sb, "true");
        }
        return (System.nanoTime() - t) / 1_000_000;
    }

    @Test
    void aSandboxRunsTheImportedImagesOwnProgram() throws IOException {
        byte[] layer = TestArchives.layer()
                .dir("bin", 0755).file("bin/busybox", 0755, Files.readAllBytes(Path.of("/bin/busybox")))
                .symlink("bin/sh", "/bin/busybox").symlink("bin/id", "busybox").symlink("bin/touch", "busybox")
                .symlink("bin/stat", "busybox").symlink("bin/cat", "busybox")
                .dir("opt", 0755).file("opt/hello.sh", 0755, "#!/bin/sh\necho \"hello from the image as $(id -u)\"\n")
                .file("opt/suid", 04755, "#!/bin/sh\n").special("dev-zero", TarArchiveEntry.LF_CHR)
                .bytes();
        ImageStore store = ImageStore.at(config.imageRoot());
        ImageInfo info = store.importArchive(TestArchives.dockerSave(storeRoot.resolve("busybox.tar"), List.of(layer)), "busybox");

        try (Sandbox sb = engine.create(new SandboxSpec("busybox", null, Map.of()))) {
            assertThat(sb.imageDigest()).isEqualTo(info.digest());
            ExecResult r = sb.exec(ExecRequest.of("/opt/hello.sh").withTimeout(Duration.ofSeconds(30)));
            assertThat(r.stdoutText()).as(r.stderrText()).isEqualTo("hello from the image as 1000\n");
            assertThat(sh(sb, "touch /x 2>&1; echo $?").stdoutText()).as("the root is read-only").contains("Read-only file system");
            assertThat(sh(sb, "touch /tmp/x /workspace/y && echo ok").stdoutText()).isEqualTo("ok\n");
            assertThat(sh(sb, "stat -c %a /opt/suid; cat /etc/resolv.conf; test -e /dev-zero || echo no-device").stdoutText())
                    .isEqualTo("755\nno-device\n");
            assertThatThrownBy(() -> store.remove("busybox")).isInstanceOf(AirlockException.class).hasMessageContaining("in use");
            // a second sandbox shares the same root, and sees nothing of the first one's /tmp
            try (Sandbox other = engine.create(new SandboxSpec("busybox", null, Map.of()))) {
                assertThat(sh(other, "test -e /tmp/x || echo fresh").stdoutText()).isEqualTo("fresh\n");
            }
        }
        // interleaved, so that the load of the host weighs on both alike
        long[] system = new long[7];
        long[] imported = new long[7];
        for (int i = 0; i < 7; i++) {
            system[i] = createMillis(SandboxSpec.defaults());
            imported[i] = createMillis(new SandboxSpec("busybox", null, Map.of()));
        }
        java.util.Arrays.sort(system);
        java.util.Arrays.sort(imported);
        System.out.printf("create + exec + destroy, median of 7: system %d ms, imported image %d ms%n", system[3], imported[3]);
        assertThatThrownBy(() -> engine.create(new SandboxSpec("missing", null, Map.of())))
                .isInstanceOf(AirlockException.class).hasMessageContaining("no image named 'missing'");
        store.remove("busybox");
        assertThat(store.list()).isEmpty();
    }

    /** The same image under gVisor: runsc serves the shared root read-only too. */
    @Test
    void anImportedImageRunsUnderGvisor() throws IOException {
        assumeThat(OciRuntime.locate("runsc")).as("runsc installed (bin/test installs it)").isNotNull();
        byte[] layer = TestArchives.layer()
                .dir("bin", 0755).file("bin/busybox", 0755, Files.readAllBytes(Path.of("/bin/busybox"))).symlink("bin/sh", "busybox")
                .bytes();
        ImageStore store = ImageStore.at(config.imageRoot());
        ImageInfo info = store.importArchive(TestArchives.dockerSave(storeRoot.resolve("gvisor.tar"), List.of(layer)), "bb-gvisor");
        OciDriverConfig gvisor = config.withRuntime("runsc");
        try (Engine runsc = new Engine(new OciDriver(gvisor))) {
            String prefix = "al-" + runsc.driver().instance() + "-";
            try (Sandbox sb = runsc.create(new SandboxSpec("bb-gvisor", null, Map.of()))) {
                assertThat(sb.imageDigest()).isEqualTo(info.digest());
                assertThat(sh(sb, "echo under gvisor as $(busybox id -u); busybox touch /x 2>/dev/null || echo root-not-writable").stdoutText())
                        .isEqualTo("under gvisor as 1000\nroot-not-writable\n");
            }
            runsc.close();
            assertThat(new LeakCheck(gvisor).find(prefix)).as("leftovers of the runsc sandbox").isEmpty();
        }
        store.remove("bb-gvisor");
    }
}
