package dev.airlock.oci.image;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/**
 * An image as it arrives: an OCI image layout (a directory, or a tar of one) or a {@code docker
 * save} tar, read down to its layers in the order they apply. A tar is first unpacked (regular
 * files and directories only, within the limits) into a scratch directory; an OCI layout's blobs
 * are checked against their digests as they are read.
 */
final class ImageArchive {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Pattern SHA256 = Pattern.compile("sha256:[0-9a-f]{64}");
    private static final String INDEX_MEDIA = "application/vnd.oci.image.index.v1+json";
    private static final String DOCKER_LIST_MEDIA = "application/vnd.docker.distribution.manifest.list.v2+json";

    /** One layer: a file of the archive, with the digest it must have (null: not checked). */
    record Layer(Path file, String digest) {
    }

    private ImageArchive() {
    }

    /**
     * The layers of the image at {@code source}, a directory or a tar; a tar is unpacked under
     * {@code scratch} (which must exist and be empty).
     */
    static List<Layer> layers(Path source, Path scratch, ImageLimits limits) throws IOException {
        Path dir = source;
        if (!Files.isDirectory(source)) {
            if (!Files.isRegularFile(source)) {
                throw AirlockException.invalid("no image archive at " + source + ": give an OCI image layout (a directory or a tar)"
                        + " or a 'docker save' tar");
            }
            unpack(source, scratch, limits);
            dir = scratch;
        }
        if (Files.isRegularFile(dir.resolve("manifest.json"), LinkOption.NOFOLLOW_LINKS)) {
            return dockerLayers(dir, limits);
        }
        if (Files.isRegularFile(dir.resolve("index.json"), LinkOption.NOFOLLOW_LINKS)) {
            return ociLayers(dir, limits);
        }
        throw AirlockException.invalid(source + " is neither an OCI image layout (it has no index.json) nor a 'docker save'"
                + " archive (it has no manifest.json)");
    }

    private static List<Layer> dockerLayers(Path dir, ImageLimits limits) throws IOException {
        JsonNode manifest = json(dir, "manifest.json", limits);
        if (!manifest.isArray() || manifest.size() != 1) {
            throw AirlockException.invalid("the archive's manifest.json lists " + (manifest.isArray() ? manifest.size() : 0)
                    + " images: import an archive of exactly one image (docker save IMAGE > FILE)");
        }
        List<Layer> layers = new ArrayList<>();
        for (JsonNode layer : manifest.get(0).path("Layers")) {
            layers.add(new Layer(member(dir, layer.asString()), null));
        }
        return checkedCount(layers, limits);
    }

    private static List<Layer> ociLayers(Path dir, ImageLimits limits) throws IOException {
        JsonNode node = json(dir, "index.json", limits);
        // an index names manifests (or further indexes): take the one for this host's platform
        for (int depth = 0; depth < 4; depth++) {
            JsonNode chosen = choose(node.path("manifests"));
            JsonNode blob = json(dir, blobPath(chosen.path("digest").asString()), limits);
            String media = blob.path("mediaType").asString(chosen.path("mediaType").asString());
            if (media.equals(INDEX_MEDIA) || media.equals(DOCKER_LIST_MEDIA) || blob.has("manifests")) {
                node = blob;
                continue;
            }
            List<Layer> layers = new ArrayList<>();
            for (JsonNode layer : blob.path("layers")) {
                String digest = layer.path("digest").asString();
                String mediaType = layer.path("mediaType").asString();
                if (mediaType.contains("zstd")) {
                    throw AirlockException.invalid("the image has a zstd-compressed layer (" + mediaType + "), which this import"
                            + " does not read: save it with gzip-compressed or plain layers");
                }
                layers.add(new Layer(member(dir, blobPath(digest)), digest));
            }
            return checkedCount(layers, limits);
        }
        throw AirlockException.invalid("the image index nests more than 4 levels deep");
    }

    private static JsonNode choose(JsonNode manifests) {
        if (!manifests.isArray() || manifests.isEmpty()) {
            throw AirlockException.invalid("the image index lists no manifest");
        }
        if (manifests.size() == 1) {
            return manifests.get(0);
        }
        String arch = switch (System.getProperty("os.arch")) {
            case "amd64", "x86_64" -> "amd64";
            case "aarch64" -> "arm64";
            default -> System.getProperty("os.arch");
        };
        for (JsonNode m : manifests) {
            if ("linux".equals(m.path("platform").path("os").asString()) && arch.equals(m.path("platform").path("architecture").asString())) {
                return m;
            }
        }
        throw AirlockException.invalid("the image index lists " + manifests.size() + " manifests and none for linux/" + arch);
    }

    private static List<Layer> checkedCount(List<Layer> layers, ImageLimits limits) {
        if (layers.isEmpty()) {
            throw AirlockException.invalid("the image has no layers");
        }
        if (layers.size() > limits.maxLayers()) {
            throw new AirlockException(AirlockException.Kind.TOO_LARGE, "the image has " + layers.size() + " layers: at most "
                    + limits.maxLayers() + " are taken");
        }
        return layers;
    }

    private static String blobPath(String digest) {
        if (!SHA256.matcher(digest).matches()) {
            throw AirlockException.invalid("the image names a blob by '" + Printable.of(digest) + "', not a sha256 digest");
        }
        return "blobs/sha256/" + digest.substring("sha256:".length());
    }

    /**
     * A file the archive names, which must be a regular file inside it, reached through no symbolic
     * link: in a directory import (an OCI layout or an unpacked 'docker save') a link anywhere on
     * the way ({@code blobs -> /var/lib/...}) would make files from elsewhere on the host the image's.
     */
    private static Path member(Path dir, String name) {
        List<String> parts = ImageTree.entryComponents(name);
        Path file = dir;
        for (String part : parts) {
            file = file.resolve(part);
            if (Files.isSymbolicLink(file)) {
                throw AirlockException.invalid("the archive names '" + Printable.of(name) + "' through the symbolic link '"
                        + Printable.of(dir.relativize(file).toString()) + "', which an import never follows: give an archive whose"
                        + " files lie in plain directories (a tar, or the directory 'docker save' or an OCI tool wrote)");
            }
        }
        if (parts.isEmpty() || !Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)) {
            throw AirlockException.invalid("the archive names '" + Printable.of(name) + "', which it does not hold");
        }
        return file;
    }

    private static JsonNode json(Path dir, String name, ImageLimits limits) throws IOException {
        Path file = member(dir, name);
        if (Files.size(file) > limits.maxJsonBytes()) {
            throw new AirlockException(AirlockException.Kind.TOO_LARGE, "the archive's " + name + " is larger than "
                    + limits.maxJsonBytes() + " bytes");
        }
        try {
            return JSON.readTree(Files.readAllBytes(file));
        } catch (RuntimeException e) {
            throw AirlockException.invalid("the archive's " + Printable.of(name) + " is not valid JSON: " + e.getMessage());
        }
    }

    /**
     * The uncompressed tar of {@code layer} (gzip is recognised by its magic bytes), once its bytes
     * were found to match its digest, if it has one.
     */
    static InputStream open(Layer layer) throws IOException {
        if (layer.digest() != null) {
            verify(layer);
        }
        BufferedInputStream in = new BufferedInputStream(Files.newInputStream(layer.file(), LinkOption.NOFOLLOW_LINKS), 65536);
        in.mark(4);
        int b1 = in.read();
        int b2 = in.read();
        int b3 = in.read();
        int b4 = in.read();
        in.reset();
        if (b1 == 0x1f && b2 == 0x8b) {
            return new GZIPInputStream(in, 65536);
        }
        if (b1 == 0x28 && b2 == 0xb5 && b3 == 0x2f && b4 == 0xfd) {
            in.close();
            throw AirlockException.invalid("a layer of the image is zstd-compressed, which this import does not read: save it"
                    + " with gzip-compressed or plain layers");
        }
        return in;
    }

    private static void verify(Layer layer) throws IOException {
        MessageDigest d = TreeDigest.sha256();
        try (InputStream in = new DigestInputStream(Files.newInputStream(layer.file(), LinkOption.NOFOLLOW_LINKS), d)) {
            in.transferTo(OutputStream.nullOutputStream());
        }
        String actual = "sha256:" + HexFormat.of().formatHex(d.digest());
        if (!actual.equals(layer.digest())) {
            throw AirlockException.invalid("the image's blob " + layer.digest() + " has the digest " + actual
                    + ": the archive is damaged or was altered");
        }
    }

    /** Unpacks the outer tar: directories and regular files only, nothing outside {@code into}. */
    private static void unpack(Path tar, Path into, ImageLimits limits) throws IOException {
        long bytes = 0;
        long entries = 0;
        try (TarArchiveInputStream in = new TarArchiveInputStream(new BufferedInputStream(Files.newInputStream(tar), 65536))) {
            TarArchiveEntry entry;
            byte[] buffer = new byte[65536];
            while ((entry = in.getNextEntry()) != null) {
                if (++entries > limits.maxEntries()) {
                    throw new AirlockException(AirlockException.Kind.TOO_LARGE, "the archive has more than " + limits.maxEntries() + " entries");
                }
                List<String> parts = ImageTree.entryComponents(entry.getName());
                if (parts.isEmpty() || !(entry.isDirectory() || entry.isFile()) || entry.isSymbolicLink() || entry.isLink()) {
                    continue; // an image archive's own structure is directories and files
                }
                List<String> dir = ImageTree.resolveDirectory(into, parts.subList(0, parts.size() - 1), true, entry.getName());
                Path target = ImageTree.at(into, dir).resolve(parts.getLast());
                if (entry.isDirectory()) {
                    if (!Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                        Files.createDirectory(target);
                    }
                    continue;
                }
                Files.deleteIfExists(target);
                try (OutputStream out = Files.newOutputStream(target, java.nio.file.StandardOpenOption.CREATE_NEW)) {
                    int n;
                    while ((n = in.read(buffer)) > 0) {
                        bytes += n;
                        if (bytes > limits.maxBytes()) {
                            throw new AirlockException(AirlockException.Kind.TOO_LARGE, "the archive holds more than "
                                    + limits.maxBytes() + " bytes: that is the most an image may be");
                        }
                        out.write(buffer, 0, n);
                    }
                }
            }
        } catch (IOException e) {
            throw AirlockException.invalid(tar + " is not a readable tar archive: " + e.getMessage());
        }
    }
}
