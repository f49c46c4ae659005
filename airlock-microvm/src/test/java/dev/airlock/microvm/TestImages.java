package dev.airlock.microvm;

import dev.airlock.oci.image.TestArchives;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The stored images the microVM tests start guests from, in stores of their own. */
final class TestImages {

    private TestImages() {
    }

    /**
     * A fresh directory under /var/tmp for a test's image store (its {@code images}), mode 0711: the
     * guests' QEMUs, host ids of their own, pass it to reach the disks. Skips the test where
     * busybox-static is missing.
     */
    static Path storeDir(String prefix) throws IOException {
        TestArchives.staticBusybox();
        Path dir = Files.createTempDirectory(Path.of("/var/tmp"), prefix);
        Files.setAttribute(dir, "unix:mode", 0711);
        return dir;
    }

    /** A layer with busybox-static as /bin/busybox and /bin/sh a link to it; more can be added. */
    static TestArchives.Layer busybox() throws IOException {
        return TestArchives.layer()
                .dir("bin", 0755).file("bin/busybox", 0755, Files.readAllBytes(Path.of("/bin/busybox"))).symlink("bin/sh", "busybox");
    }
}
