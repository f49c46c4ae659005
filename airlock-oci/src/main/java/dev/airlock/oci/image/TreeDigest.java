package dev.airlock.oci.image;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The digest that names an image: SHA-256 over one record per entry below its root, in the order
 * of their paths (relative to the root, compared as UTF-8 bytes), without following links:
 * <pre>
 *   d MODE PATH\n                      a directory
 *   f MODE PATH SIZE SHA256(CONTENT)\n  a regular file (each name of a hard-linked file alike)
 *   l MODE PATH -&gt; TARGET\n             a symbolic link
 * </pre>
 * MODE is the permission bits in octal (e.g. {@code 755}). Two trees with the same paths, modes,
 * contents and link targets have the same digest, whenever and wherever they were made; owners and
 * times do not count (an image's files all belong to the host's root). Also counts the tree's
 * bytes and entries.
 */
record TreeDigest(String digest, long sizeBytes, long files) {

    static TreeDigest of(Path root) throws IOException {
        List<Path> paths = new ArrayList<>();
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                if (!dir.equals(root)) {
                    paths.add(dir);
                }
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                paths.add(file);
                return FileVisitResult.CONTINUE;
            }
        });
        List<String> relative = new ArrayList<>();
        for (Path p : paths) {
            relative.add(root.relativize(p).toString());
        }
        relative.sort((a, b) -> java.util.Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
        MessageDigest tree = sha256();
        long size = 0;
        for (String rel : relative) {
            Path p = root.resolve(rel);
            int mode = (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777;
            String perm = Integer.toOctalString(mode);
            String record;
            if (Files.isSymbolicLink(p)) {
                record = "l " + perm + " " + rel + " -> " + Files.readSymbolicLink(p) + "\n";
            } else if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                record = "d " + perm + " " + rel + "\n";
            } else {
                long fileSize = Files.size(p);
                size += fileSize;
                record = "f " + perm + " " + rel + " " + fileSize + " " + contentDigest(p) + "\n";
            }
            tree.update(record.getBytes(StandardCharsets.UTF_8));
        }
        return new TreeDigest("sha256:" + HexFormat.of().formatHex(tree.digest()), size, relative.size());
    }

    private static String contentDigest(Path file) throws IOException {
        MessageDigest d = sha256();
        byte[] buffer = new byte[65536];
        try (InputStream in = Files.newInputStream(file, LinkOption.NOFOLLOW_LINKS)) {
            int n;
            while ((n = in.read(buffer)) > 0) {
                d.update(buffer, 0, n);
            }
        }
        return HexFormat.of().formatHex(d.digest());
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
