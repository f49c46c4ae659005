package dev.airlock.oci.image;

import dev.airlock.core.ImageInfo;
import dev.airlock.core.AirlockException;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The image store without sandboxes: imports of archives the test makes (docker save, OCI layout as
 * directory and tar), layers applied with whiteouts, hostile entries refused or neutralised, the
 * digest, the index, and rm refused while an image is held.
 */
class ImageStoreTest {

    @TempDir
    Path tmp;
    Path storeRoot;
    ImageStore store;

    @BeforeEach
    void setUp() throws IOException {
        Files.setAttribute(tmp, "unix:mode", 0711);
        storeRoot = tmp.resolve("images");
        store = ImageStore.at(storeRoot);
    }

    private Path root(ImageInfo info) {
        return storeRoot.resolve("roots").resolve(info.digest().substring(7));
    }

    private static int mode(Path p) throws IOException {
        return (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777;
    }

    @Test
    void layersApplyInOrderWithWhiteouts() throws IOException {
        byte[] lower = TestArchives.layer()
                .dir("etc", 0755).file("etc/keep", 0644, "keep").file("etc/gone", 0644, "gone")
                .dir("opaque", 0755).file("opaque/old", 0644, "old").dir("opaque/sub", 0755).file("opaque/sub/old", 0644, "old")
                .file("replaced", 0644, "lower").dir("dir-then-file", 0755).file("dir-then-file/x", 0644, "x")
                .file("shared", 0644, "original").hardlink("shared-link", "shared").bytes();
        byte[] upper = TestArchives.layer()
                .file("etc/.wh.gone", 0644, "").file("nowhere/.wh.nothing", 0644, "")
                .file("opaque/new", 0644, "new")          // this layer's entry before the marker stays
                .file("opaque/.wh..wh..opq", 0644, "")
                .dir("opaque/sub", 0755).file("opaque/sub/new", 0644, "new")
                .file("replaced", 0644, "upper").file("dir-then-file", 0644, "now a file")
                .file("shared", 0644, "changed").bytes();
        ImageInfo info = store.importArchive(TestArchives.dockerSave(tmp.resolve("img.tar"), List.of(lower, upper)), "layered");
        Path r = root(info);
        assertThat(r.resolve("etc/keep")).hasContent("keep");
        assertThat(r.resolve("etc/gone")).doesNotExist();
        assertThat(r.resolve("nowhere")).as("a whiteout makes no directory").doesNotExist();
        assertThat(r.resolve("opaque/old")).doesNotExist();
        assertThat(r.resolve("opaque/new")).hasContent("new");
        assertThat(r.resolve("opaque/sub/old")).doesNotExist();
        assertThat(r.resolve("opaque/sub/new")).hasContent("new");
        assertThat(r.resolve("replaced")).hasContent("upper");
        assertThat(r.resolve("dir-then-file")).isRegularFile().hasContent("now a file");
        assertThat(r.resolve("shared")).hasContent("changed");
        assertThat(r.resolve("shared-link")).hasContent("original"); // a new file, as a union would show it
        // what every sandbox needs
        assertThat(r.resolve("etc/passwd")).content().contains("sandbox:x:1000:1000");
        assertThat(r.resolve("etc/resolv.conf")).isEmptyFile();
        for (String dir : ImageSkeleton.MOUNT_POINTS) {
            assertThat(r.resolve(dir)).isDirectory();
        }
        assertThat(mode(r.resolve("tmp"))).isEqualTo(01777);
        assertThat(Files.readSymbolicLink(r.resolve("home/user"))).as("E2B's home").isEqualTo(Path.of("../workspace"));

        assertThat(info.name()).isEqualTo("layered");
        assertThat(info.digest()).matches("sha256:[0-9a-f]{64}");
        assertThat(info.files()).isPositive();
        assertThat(info.source()).endsWith("img.tar");
        assertThat(store.inspect("layered")).isEqualTo(info);
        assertThat(store.list()).containsExactly(info);
    }

    @Test
    void theDigestDependsOnTheFilesOnly() throws IOException {
        byte[] layer = TestArchives.layer().dir("bin", 0755).file("bin/tool", 0755, "#!/bin/sh\necho hi\n").symlink("bin/t", "tool").bytes();
        ImageInfo a = store.importArchive(TestArchives.dockerSave(tmp.resolve("a.tar"), List.of(layer)), "a");
        ImageInfo b = store.importArchive(TestArchives.ociLayout(tmp.resolve("oci"), List.of(layer)), "b");
        ImageInfo c = store.importArchive(TestArchives.tarOf(tmp.resolve("oci"), tmp.resolve("oci.tar")), "c");
        assertThat(b.digest()).isEqualTo(a.digest());
        assertThat(c.digest()).isEqualTo(a.digest());
        byte[] other = TestArchives.layer().dir("bin", 0755).file("bin/tool", 0644, "#!/bin/sh\necho hi\n").symlink("bin/t", "tool").bytes();
        ImageInfo d = store.importArchive(TestArchives.dockerSave(tmp.resolve("d.tar"), List.of(other)), "d");
        assertThat(d.digest()).as("a mode is part of the digest").isNotEqualTo(a.digest());
        assertThat(storeRoot.resolve("roots")).isDirectoryContaining(p -> p.getFileName().toString().equals(a.digest().substring(7)));
        try (var roots = Files.list(storeRoot.resolve("roots"))) {
            assertThat(roots.filter(Files::isDirectory).count()).as("identical trees stored once").isEqualTo(2);
        }
    }

    @Test
    void privilegeIsNeutralised() throws IOException {
        byte[] layer = TestArchives.layer()
                .file("suid", 04755, "x").file("sgid", 02711, "x").file("private", 0600, "secret-ish")
                .dir("sticky", 01777)
                .special("dev-null", TarArchiveEntry.LF_CHR).special("disk", TarArchiveEntry.LF_BLK).special("fifo", TarArchiveEntry.LF_FIFO)
                .symlink("abs", "/etc/passwd").symlink("bin", "usr/bin").dir("usr/bin", 0755)
                .file("bin/through-link", 0644, "placed through an in-image link").bytes();
        Path r = root(store.importArchive(TestArchives.dockerSave(tmp.resolve("p.tar"), List.of(layer)), "neutral"));
        assertThat(mode(r.resolve("suid"))).isEqualTo(0755);
        assertThat(mode(r.resolve("sgid"))).isEqualTo(0755);
        assertThat(mode(r.resolve("private"))).isEqualTo(0644);
        assertThat(mode(r.resolve("sticky"))).isEqualTo(0755);
        assertThat(r.resolve("dev-null")).doesNotExist();
        assertThat(r.resolve("disk")).doesNotExist();
        assertThat(r.resolve("fifo")).doesNotExist();
        assertThat(Files.readSymbolicLink(r.resolve("abs")).toString()).as("absolute links stored relative").isEqualTo("etc/passwd");
        assertThat(r.resolve("usr/bin/through-link")).hasContent("placed through an in-image link");
        assertThat(Files.getOwner(r.resolve("suid")).getName()).isEqualTo(Files.getOwner(tmp).getName());
    }

    @Test
    void hostileArchivesAreRefusedAndWriteNothingOutside() throws IOException {
        Path outside = tmp.resolve("outside");
        Files.createDirectories(outside);
        String out = outside.toString();
        List<TestArchives.Layer> hostile = List.of(
                TestArchives.layer().file("../escape", 0644, "x"),
                TestArchives.layer().file("a/../../escape", 0644, "x"),
                TestArchives.layer().file(out + "/abs", 0644, "x"),
                TestArchives.layer().symlink("up", "../../../../" + out),
                TestArchives.layer().dir("d", 0755).symlink("d/up", "../.."),
                TestArchives.layer().dir("d", 0755).symlink("d/s", "..").symlink("d/twisty", "s/../.."),
                TestArchives.layer().hardlink("hard", "../../../../etc/passwd"),
                TestArchives.layer().hardlink("hard", "/etc/passwd"),
                TestArchives.layer().symlink("s", "/etc/passwd").hardlink("hard", "s"),
                TestArchives.layer().file(".wh...", 0644, ""));
        int i = 0;
        for (TestArchives.Layer layer : hostile) {
            Path archive = TestArchives.dockerSave(tmp.resolve("hostile" + i + ".tar"), List.of(layer.bytes()));
            String name = "hostile" + i++;
            assertThatThrownBy(() -> store.importArchive(archive, name)).as(name)
                    .isInstanceOf(AirlockException.class).hasMessageContaining("is refused");
            assertThatThrownBy(() -> store.inspect(name)).hasMessageContaining("no image named");
        }
        // a link pointing out, then a file written "through" it: the link resolves inside the root
        byte[] through = TestArchives.layer().symlink("link", out).file("link/planted", 0644, "x").bytes();
        Path r = root(store.importArchive(TestArchives.dockerSave(tmp.resolve("t.tar"), List.of(through)), "through"));
        assertThat(r.resolve(out.substring(1) + "/planted")).hasContent("x");
        try (var left = Files.list(outside)) {
            assertThat(left).as("nothing written outside the root").isEmpty();
        }
        try (var left = Files.list(storeRoot.resolve("tmp"))) {
            assertThat(left).as("no staging left behind").isEmpty();
        }
    }

    /**
     * A directory import (an OCI layout, an unpacked 'docker save') whose members are reached
     * through a symbolic link (issue 29: {@code blobs} pointing elsewhere on the host) is refused: the
     * files there never become the image's. The same layout with plain directories imports.
     */
    @Test
    void aDirectoryImportThroughASymbolicLinkIsRefused() throws IOException {
        byte[] layer = TestArchives.layer().file("hello", 0644, "from the layer").bytes();
        Path plain = TestArchives.ociLayout(tmp.resolve("plain"), List.of(layer));
        assertThat(store.importArchive(plain, "plain").name()).isEqualTo("plain");

        Path linked = TestArchives.ociLayout(tmp.resolve("linked"), List.of(layer));
        Path elsewhere = tmp.resolve("elsewhere-on-the-host");
        Files.move(linked.resolve("blobs"), elsewhere);
        Files.createSymbolicLink(linked.resolve("blobs"), elsewhere);
        assertThatThrownBy(() -> store.importArchive(linked, "linked")).isInstanceOf(AirlockException.class)
                .hasMessageContaining("through the symbolic link 'blobs'").hasMessageContaining("never follows");

        // an unpacked 'docker save' whose layer directory (layer0/, as TestArchives names it) is a link
        Path save = tmp.resolve("save");
        Files.createDirectories(save);
        Path docker = TestArchives.dockerSave(tmp.resolve("d.tar"), List.of(layer));
        try (var in = new org.apache.commons.compress.archivers.tar.TarArchiveInputStream(Files.newInputStream(docker))) {
            for (var e = in.getNextEntry(); e != null; e = in.getNextEntry()) {
                Path target = save.resolve(e.getName());
                Files.createDirectories(target.getParent());
                if (!e.isDirectory()) {
                    Files.copy(in, target);
                }
            }
        }
        Path layerDir = save.resolve("layer0");
        Files.move(layerDir, tmp.resolve("layer-elsewhere"));
        Files.createSymbolicLink(layerDir, tmp.resolve("layer-elsewhere"));
        assertThatThrownBy(() -> store.importArchive(save, "saved")).isInstanceOf(AirlockException.class)
                .hasMessageContaining("through the symbolic link");
    }

    @Test
    void boundsAndBadInputAreClearErrors() throws IOException {
        ImageStore small = ImageStore.at(tmp.resolve("small"), new ImageLimits(1000, 10, 2, 4096));
        Path big = TestArchives.dockerSave(tmp.resolve("big.tar"), List.of(TestArchives.layer().file("f", 0644, new byte[2000]).bytes()));
        assertThatThrownBy(() -> small.importArchive(big, "big")).hasMessageContaining("more than 1000 bytes");
        TestArchives.Layer many = TestArchives.layer();
        for (int i = 0; i < 11; i++) {
            many.file("f" + i, 0644, "");
        }
        Path manyArchive = TestArchives.dockerSave(tmp.resolve("many.tar"), List.of(many.bytes()));
        ImageStore few = ImageStore.at(tmp.resolve("few"), new ImageLimits(1 << 20, 10, 2, 4096));
        assertThatThrownBy(() -> few.importArchive(manyArchive, "many")).hasMessageContaining("more than 10 entries");
        byte[] l = TestArchives.layer().file("x", 0644, "").bytes();
        Path layers = TestArchives.dockerSave(tmp.resolve("layers.tar"), List.of(l, l, l));
        assertThatThrownBy(() -> few.importArchive(layers, "layers")).hasMessageContaining("3 layers");

        assertThatThrownBy(() -> store.importArchive(tmp.resolve("missing.tar"), "x")).hasMessageContaining("no image archive");
        Path notTar = Files.writeString(tmp.resolve("not.tar"), "hello");
        assertThatThrownBy(() -> store.importArchive(notTar, "x")).hasMessageContaining("neither an OCI image layout");
        assertThatThrownBy(() -> store.importArchive(big, "Bad/Name")).hasMessageContaining("is not valid");
        assertThatThrownBy(() -> store.importArchive(big, "system")).hasMessageContaining("'system'");
        assertThatThrownBy(() -> store.inspect("nothing")).hasMessageContaining("no image named 'nothing'");
        assertThatThrownBy(() -> ImageStore.at(tmp.resolve("never-made")).remove("x")).hasMessageContaining("no image named 'x'");
        assertThat(ImageStore.at(tmp.resolve("never-made")).list()).isEmpty();

        Path oci = TestArchives.ociLayout(tmp.resolve("tampered"), List.of(l));
        try (var blobs = Files.list(oci.resolve("blobs/sha256"))) {
            for (Path blob : blobs.toList()) {
                if (Files.size(blob) > 0 && Files.readAllBytes(blob)[0] == 0x1f) {
                    Files.write(blob, TestArchives.gzip(TestArchives.layer().file("evil", 0644, "").bytes()));
                }
            }
        }
        assertThatThrownBy(() -> store.importArchive(oci, "tampered")).hasMessageContaining("damaged or was altered");
    }

    @Test
    void removeIsRefusedWhileAnImageIsHeld() throws IOException {
        byte[] layer = TestArchives.layer().file("x", 0644, "x").bytes();
        ImageInfo info = store.importArchive(TestArchives.dockerSave(tmp.resolve("x.tar"), List.of(layer)), "held");
        Path r = root(info);
        try (ImageStore.Lease lease = store.use("held")) {
            assertThat(lease.rootfs()).isEqualTo(r);
            assertThat(lease.digest()).isEqualTo(info.digest());
            assertThatThrownBy(() -> store.remove("held")).isInstanceOf(AirlockException.class)
                    .hasMessageContaining("is in use");
        }
        store.remove("held");
        assertThat(store.list()).isEmpty();
        assertThat(r).doesNotExist();
        assertThatThrownBy(() -> store.remove("held")).hasMessageContaining("no image named");
    }
}
