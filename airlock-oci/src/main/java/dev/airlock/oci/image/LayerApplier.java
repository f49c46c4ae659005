package dev.airlock.oci.image;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Printable;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Applies layers (tar streams) one after the other onto a root directory, as an OCI runtime's
 * union of them would show it: entries replace what lower layers had, {@code .wh.NAME} removes
 * NAME of the lower layers, {@code .wh..wh..opq} hides everything the lower layers had in its
 * directory.
 *
 * <p>What could reach out of the root or give privilege is refused or neutralised: names with
 * {@code ..} or absolute names are refused; entries are placed by following links only inside
 * the root ({@link ImageTree}); a symbolic link's target must stay inside the root (an absolute
 * one is stored relative) and a hard link's must be a regular file already in the root; device
 * nodes and fifos are dropped; every file and directory belongs to the host user doing the
 * import (root), and its mode is normalised: no setuid, setgid or sticky bit, no write bit for
 * group or others, and what the owner could read or run everyone may ({@code 0644}, {@code 0755}
 * for a file executable by anyone, {@code 0755} for a directory). The sandbox user, whoever it is
 * on the host, can so read what the image's owner could, and nothing more is granted: the root is
 * read-only in every sandbox anyway.
 */
final class LayerApplier {

    static final String WHITEOUT = ".wh.";
    static final String OPAQUE = ".wh..wh..opq";

    private final Path root;
    private final ImageLimits limits;
    private long bytes;
    private long entries;
    private long dropped;

    LayerApplier(Path root, ImageLimits limits) {
        this.root = root;
        this.limits = limits;
    }

    /** Entries dropped so far (device nodes, fifos, unknown types). */
    long dropped() {
        return dropped;
    }

    /** Applies one uncompressed tar layer. */
    void apply(InputStream tar) throws IOException {
        // What this layer made: an opaque whiteout hides only the lower layers' files.
        Set<String> madeHere = new HashSet<>();
        TarArchiveInputStream in = new TarArchiveInputStream(tar);
        TarArchiveEntry entry;
        while ((entry = in.getNextEntry()) != null) {
            if (++entries > limits.maxEntries()) {
                throw new AirlockException(AirlockException.Kind.TOO_LARGE, "the image has more than " + limits.maxEntries()
                        + " entries: that is the most an image may have");
            }
            String name = entry.getName();
            List<String> parts = ImageTree.entryComponents(name);
            if (parts.isEmpty()) {
                continue; // the root itself: its mode stays the store's
            }
            if (entry.isCharacterDevice() || entry.isBlockDevice() || entry.isFIFO()) {
                dropped++; // a device node or a fifo is never part of an image
                continue;
            }
            String base = parts.getLast();
            boolean whiteout = base.startsWith(WHITEOUT);
            List<String> dir;
            try {
                // a whiteout in a directory the lower layers lack hides nothing, and makes no directory
                dir = ImageTree.resolveDirectory(root, parts.subList(0, parts.size() - 1), !whiteout, name);
            } catch (AirlockException e) {
                if (whiteout && e.kind() == AirlockException.Kind.NOT_FOUND) {
                    continue;
                }
                throw e;
            }
            Path parent = ImageTree.at(root, dir);
            if (base.equals(OPAQUE)) {
                hideLower(parent, join(dir), madeHere);
                continue;
            }
            if (whiteout) {
                String hidden = base.substring(WHITEOUT.length());
                if (hidden.isEmpty() || hidden.equals(".") || hidden.equals("..")) {
                    throw ImageTree.refused(name, "it is a whiteout of nothing");
                }
                if (!madeHere.contains(join(dir, hidden))) {
                    HostFiles.deleteTree(parent.resolve(hidden));
                }
                continue;
            }
            Path target = parent.resolve(base);
            String key = join(dir, base);
            if (entry.isDirectory()) {
                if (!Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
                    HostFiles.deleteTree(target);
                    Files.createDirectory(target);
                }
                Files.setAttribute(target, "unix:mode", 0755, LinkOption.NOFOLLOW_LINKS);
            } else if (entry.isSymbolicLink()) {
                String stored = ImageTree.checkedLinkTarget(dir, entry.getLinkName(), name);
                HostFiles.deleteTree(target);
                Files.createSymbolicLink(target, Path.of(stored));
            } else if (entry.isLink()) {
                List<String> linked = ImageTree.entryComponents(entry.getLinkName());
                if (linked.isEmpty()) {
                    throw ImageTree.refused(name, "it is a hard link to the root directory");
                }
                List<String> linkedDir = ImageTree.resolveDirectory(root, linked.subList(0, linked.size() - 1), false, name);
                Path source = ImageTree.at(root, linkedDir).resolve(linked.getLast());
                if (!Files.isRegularFile(source, LinkOption.NOFOLLOW_LINKS)) {
                    throw ImageTree.refused(name, "it is a hard link to '" + Printable.of(entry.getLinkName())
                            + "', which is not a regular file of the image");
                }
                if (!source.equals(target)) {
                    HostFiles.deleteTree(target);
                    Files.createLink(target, source);
                }
            } else if (entry.isFile()) {
                HostFiles.deleteTree(target);
                copy(in, target, name);
                boolean executable = (entry.getMode() & 0111) != 0;
                Files.setAttribute(target, "unix:mode", executable ? 0755 : 0644, LinkOption.NOFOLLOW_LINKS);
            } else {
                dropped++; // a type no image needs (contiguous file, socket...)
                continue;
            }
            madeHere.add(key);
        }
    }

    private void copy(InputStream in, Path target, String name) throws IOException {
        byte[] buffer = new byte[65536];
        try (OutputStream out = Files.newOutputStream(target, java.nio.file.StandardOpenOption.CREATE_NEW)) {
            int n;
            while ((n = in.read(buffer)) > 0) {
                bytes += n;
                if (bytes > limits.maxBytes()) {
                    throw new AirlockException(AirlockException.Kind.TOO_LARGE, "the image's files come to more than "
                            + limits.maxBytes() + " bytes (at '" + Printable.of(name) + "'): that is the most an image may hold");
                }
                out.write(buffer, 0, n);
            }
        }
    }

    /** Removes what lies under {@code dir} but was not made by this layer, keeping this layer's entries. */
    private static void hideLower(Path dir, String key, Set<String> madeHere) throws IOException {
        List<Path> children = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir)) {
            stream.forEach(children::add);
        }
        for (Path child : children) {
            String childKey = join(key, child.getFileName().toString());
            if (!madeHere.contains(childKey)) {
                HostFiles.deleteTree(child);
            } else if (Files.isDirectory(child, LinkOption.NOFOLLOW_LINKS)) {
                hideLower(child, childKey, madeHere);
            }
        }
    }

    private static String join(List<String> parts) {
        return String.join("/", parts);
    }

    private static String join(List<String> parts, String last) {
        return join(parts.isEmpty() ? "" : join(parts), last);
    }

    private static String join(String dir, String last) {
        return dir.isEmpty() ? last : dir + "/" + last;
    }
}
