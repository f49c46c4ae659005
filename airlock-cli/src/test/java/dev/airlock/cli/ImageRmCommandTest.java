package dev.airlock.cli;

import dev.airlock.oci.image.ImageStore;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock image rm} as a user runs it (issue 31: the package cache stayed after the last
 * image was removed): removing an image while another is left keeps the cache that rebuilds use;
 * removing the last one removes the cache too, and says so with its size.
 */
class ImageRmCommandTest {

    /** An image of one small file, as {@code name}. */
    private static void add(ImageStore store, String name, String content) throws IOException {
        ByteArrayOutputStream layer = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(layer)) {
            byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
            TarArchiveEntry e = new TarArchiveEntry("etc/motd");
            e.setMode(0644);
            e.setSize(bytes.length);
            tar.putArchiveEntry(e);
            tar.write(bytes);
            tar.closeArchiveEntry();
        }
        store.add(name, new ByteArrayInputStream(layer.toByteArray()), "test layer");
    }

    @Test
    void theLastImageTakesThePackageCacheWithIt(@TempDir Path dir) throws Exception {
        Path images = dir.resolve("images");
        ImageStore store = ImageStore.at(images);
        add(store, "one", "first\n");
        add(store, "two", "second\n");
        Path cache = Files.createDirectories(images.resolve(ImageCommand.PACKAGE_CACHE));
        Files.write(cache.resolve("jq_1.6_amd64.deb"), new byte[3 << 20]);

        CliProcess first = CliProcess.run("image", "rm", "one", "--image-dir", images.toString());
        assertThat(first.exitCode()).as(first.stderr()).isZero();
        assertThat(first.stdout()).isEqualTo("removed image one\n");
        assertThat(cache.resolve("jq_1.6_amd64.deb")).as("kept while an image is left to rebuild").exists();

        CliProcess last = CliProcess.run("image", "rm", "two", "--image-dir", images.toString());
        assertThat(last.exitCode()).as(last.stderr()).isZero();
        assertThat(last.stdout()).isEqualTo("removed image two\nremoved the package cache " + cache + " (3 MiB): no image is left to rebuild\n");
        assertThat(cache).doesNotExist();
        assertThat(images.resolve("index.json")).as("the store itself stays").exists();
    }
}
