package dev.airlock.oci.image;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.GZIPOutputStream;

/** Image archives the tests make themselves: layers as tars, wrapped as docker save or an OCI layout. */
public final class TestArchives {

    private TestArchives() {
    }

    /** A layer under construction: names are written as given (an absolute one too). */
    public static final class Layer {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final TarArchiveOutputStream tar;

        Layer() {
            tar = new TarArchiveOutputStream(bytes);
            tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        }

        public Layer dir(String name, int mode) {
            TarArchiveEntry e = new TarArchiveEntry(name.endsWith("/") ? name : name + "/", TarArchiveEntry.LF_DIR, true);
            e.setMode(mode);
            return put(e, null);
        }

        public Layer file(String name, int mode, String content) {
            return file(name, mode, content.getBytes(StandardCharsets.UTF_8));
        }

        public Layer file(String name, int mode, byte[] content) {
            TarArchiveEntry e = new TarArchiveEntry(name, TarArchiveEntry.LF_NORMAL, true);
            e.setMode(mode);
            e.setSize(content.length);
            e.setIds(0, 0);
            return put(e, content);
        }

        public Layer symlink(String name, String target) {
            TarArchiveEntry e = new TarArchiveEntry(name, TarArchiveEntry.LF_SYMLINK, true);
            e.setLinkName(target);
            e.setMode(0777);
            return put(e, null);
        }

        public Layer hardlink(String name, String target) {
            TarArchiveEntry e = new TarArchiveEntry(name, TarArchiveEntry.LF_LINK, true);
            e.setLinkName(target);
            return put(e, null);
        }

        public Layer special(String name, byte type) {
            TarArchiveEntry e = new TarArchiveEntry(name, type, true);
            e.setMode(0666);
            if (type != TarArchiveEntry.LF_FIFO) {
                e.setDevMajor(1);
                e.setDevMinor(3);
            }
            return put(e, null);
        }

        private Layer put(TarArchiveEntry e, byte[] content) {
            try {
                tar.putArchiveEntry(e);
                if (content != null) {
                    tar.write(content);
                }
                tar.closeArchiveEntry();
            } catch (IOException ex) {
                throw new RuntimeException(ex);
            }
            return this;
        }

        public byte[] bytes() {
            try {
                tar.finish();
            } catch (IOException ex) {
                throw new RuntimeException(ex);
            }
            return bytes.toByteArray();
        }
    }

    /**
     * The host's /bin/busybox, for an image of its own: the test is skipped unless it is the static
     * one (busybox-static, which bin/test installs); a dynamically linked busybox names its loader,
     * which such an image does not have.
     */
    public static byte[] staticBusybox() throws IOException {
        Path busybox = Path.of("/bin/busybox");
        org.assertj.core.api.Assumptions.assumeThat(Files.isRegularFile(busybox)).as("busybox-static installed (bin/test installs it)").isTrue();
        byte[] bytes = Files.readAllBytes(busybox);
        org.assertj.core.api.Assumptions.assumeThat(new String(bytes, StandardCharsets.ISO_8859_1))
                .as("/bin/busybox is statically linked (busybox-static)").doesNotContain("/lib64/ld-linux");
        return bytes;
    }

    public static Layer layer() {
        return new Layer();
    }

    public static byte[] gzip(byte[] b) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(out)) {
            gz.write(b);
        }
        return out.toByteArray();
    }

    /** A {@code docker save} tar of one image made of {@code layers}, written to {@code file}. */
    public static Path dockerSave(Path file, List<byte[]> layers) throws IOException {
        try (OutputStream out = Files.newOutputStream(file); TarArchiveOutputStream tar = new TarArchiveOutputStream(out)) {
            StringBuilder names = new StringBuilder();
            for (int i = 0; i < layers.size(); i++) {
                String name = "layer" + i + "/layer.tar";
                add(tar, name, layers.get(i));
                names.append(i == 0 ? "" : ",").append('"').append(name).append('"');
            }
            add(tar, "config.json", "{}".getBytes(StandardCharsets.UTF_8));
            add(tar, "manifest.json", ("[{\"Config\":\"config.json\",\"RepoTags\":[\"test:latest\"],\"Layers\":[" + names + "]}]")
                    .getBytes(StandardCharsets.UTF_8));
        }
        return file;
    }

    /** An OCI image layout directory of one image made of {@code layers} (gzip-compressed), at {@code dir}. */
    public static Path ociLayout(Path dir, List<byte[]> layers) throws IOException {
        Files.createDirectories(dir.resolve("blobs/sha256"));
        Files.writeString(dir.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
        List<String> layerJson = new ArrayList<>();
        for (byte[] layer : layers) {
            byte[] gz = gzip(layer);
            layerJson.add("{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"" + blob(dir, gz)
                    + "\",\"size\":" + gz.length + "}");
        }
        byte[] config = "{\"architecture\":\"amd64\",\"os\":\"linux\"}".getBytes(StandardCharsets.UTF_8);
        byte[] manifest = ("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":"
                + "{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" + blob(dir, config) + "\",\"size\":"
                + config.length + "},\"layers\":[" + String.join(",", layerJson) + "]}").getBytes(StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("index.json"), "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
                + "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" + blob(dir, manifest) + "\",\"size\":" + manifest.length + "}]}");
        return dir;
    }

    /** {@code dir} (an OCI layout) as a tar at {@code file}. */
    public static Path tarOf(Path dir, Path file) throws IOException {
        try (OutputStream out = Files.newOutputStream(file); TarArchiveOutputStream tar = new TarArchiveOutputStream(out);
             var walk = Files.walk(dir)) {
            for (Path p : walk.filter(Files::isRegularFile).toList()) {
                add(tar, dir.relativize(p).toString(), Files.readAllBytes(p));
            }
        }
        return file;
    }

    private static String blob(Path dir, byte[] b) throws IOException {
        try {
            String hex = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
            Files.write(dir.resolve("blobs/sha256").resolve(hex), b);
            return "sha256:" + hex;
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void add(TarArchiveOutputStream tar, String name, byte[] content) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(content.length);
        e.setMode(0644);
        tar.putArchiveEntry(e);
        tar.write(content);
        tar.closeArchiveEntry();
    }

}
