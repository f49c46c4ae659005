package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.ImageInfo;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageStore;
import dev.airlock.oci.image.TestArchives;
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

/**
 * A guest whose root is an image the test imported itself (busybox-static and a script of its own),
 * given to QEMU as a read-only squashfs disk made from the image store's tree ({@link GuestDisks}):
 * the image's programs run, nothing of the host's /usr is there (no 9p export at all), the image's
 * files are read-only and keep their modes, the guest's own /tmp and /workspace are writable, the
 * image is held while a guest uses it, and its disk goes with it.
 */
class MicroVmImageTest {

    static Path storeRoot;
    static MicroVmDriverConfig config;
    static MicroVmDriver driver;
    static Engine engine;

    @BeforeAll
    static void openEngine() throws IOException {
        storeRoot = TestImages.storeDir("airlock-vm-images");
        config = MicroVmDriverConfig.defaults().withImageRoot(storeRoot.resolve("images"));
        driver = new MicroVmDriver(config);
        engine = new Engine(driver);
    }

    @AfterAll
    static void closeEngine() {
        if (engine == null) {
            return;
        }
        String instance = driver.instance();
        engine.close();
        dev.airlock.core.HostFiles.deleteTree(storeRoot);
        assertThat(MicroVmLeakCheck.findAll(config.stateRoot())).as("leftovers of this test's guests")
                .noneMatch(l -> l.contains(instance));
    }

    private static ExecResult sh(Sandbox sandbox, String line) {
        return sandbox.exec(ExecRequest.of("/bin/sh", "-c", line).withTimeout(Duration.ofSeconds(60)));
    }

    @Test
    void aGuestRunsTheStoredImageFromAReadOnlyDiskAndTheDiskGoesWithTheImage() throws IOException {
        byte[] layer = TestImages.busybox().symlink("bin/id", "busybox").symlink("bin/touch", "busybox")
                .symlink("bin/stat", "busybox").symlink("bin/cat", "busybox").symlink("bin/ls", "busybox")
                .symlink("bin/mount", "busybox").symlink("bin/uname", "busybox")
                .dir("opt", 0755).file("opt/hello.sh", 0755, "#!/bin/sh\necho \"hello from the image as $(id -u) on $(uname -r)\"\n")
                .file("opt/suid", 04755, "#!/bin/sh\n")
                .bytes();
        ImageStore store = ImageStore.at(config.imageRoot());
        ImageInfo info = store.importArchive(TestArchives.dockerSave(storeRoot.resolve("busybox.tar"), List.of(layer)), "vm-busybox");
        assertThat(driver.images()).extracting(ImageInfo::name).containsExactly("vm-busybox");
        Path disk = store.diskOf(info.digest());

        try (Sandbox sandbox = engine.create(new SandboxSpec("vm-busybox", null, Map.of()))) {
            assertThat(sandbox.imageDigest()).isEqualTo(info.digest());
            assertThat(disk).as("the image's disk, made at the first guest").isRegularFile();
            ExecResult hello = sandbox.exec(ExecRequest.of("/opt/hello.sh").withTimeout(Duration.ofSeconds(60)));
            assertThat(hello.stdoutText()).as(hello.stderrText()).isEqualTo("hello from the image as 1000 on " + driver.guestKernelRelease() + "\n");
            assertThat(sh(sandbox, "test -e /usr/bin/python3 || echo no-host-usr; grep -c ' 9p ' /proc/mounts").stdoutText())
                    .as("nothing of the host's /usr, and no 9p mount at all").isEqualTo("no-host-usr\n0\n");
            assertThat(sh(sandbox, "touch /opt/x 2>&1; echo $?").stdoutText()).as("the image is read-only").endsWith("1\n");
            assertThat(sh(sandbox, "touch /tmp/x /workspace/y && echo ok").stdoutText()).isEqualTo("ok\n");
            assertThat(sh(sandbox, "stat -c %a /opt/suid; grep ' /opt ' /proc/mounts | grep -c nosuid").stdoutText())
                    .as("the mode the store kept (it cuts set-uid bits), and set-uid meaningless on the mount anyway").isEqualTo("755\n1\n");
            assertThatThrownBy(() -> store.remove("vm-busybox")).isInstanceOf(AirlockException.class).hasMessageContaining("in use");
            // a second guest shares the disk, and sees nothing of the first one's /tmp
            try (Sandbox other = engine.create(new SandboxSpec("vm-busybox", null, Map.of()))) {
                assertThat(sh(other, "test -e /tmp/x || echo fresh").stdoutText()).isEqualTo("fresh\n");
            }
        }
        assertThatThrownBy(() -> engine.create(new SandboxSpec("vm-missing", null, Map.of())))
                .isInstanceOf(AirlockException.class).hasMessageContaining("no image named 'vm-missing'");

        store.remove("vm-busybox");
        assertThat(disk).as("the disk goes with the image's tree").doesNotExist();
    }
}
