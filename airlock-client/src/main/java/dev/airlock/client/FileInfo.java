package dev.airlock.client;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

/**
 * One path in a sandbox as the server saw it, from stat, list, write, mkdir or rename.
 *
 * @param path       absolute path in the sandbox's own view
 * @param size       size in bytes (of the link itself for a symlink)
 * @param mode       permission bits, such as {@code 0644} (decimal 420)
 * @param modifiedAt last modification time; null if the server did not say
 * @param linkTarget where a symlink points; null for anything else
 */
public record FileInfo(String path, FileType type, long size, int mode, Instant modifiedAt, String linkTarget) {

    public FileInfo {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(type, "type");
        if (size < 0) {
            throw new IllegalArgumentException("size " + size + " of " + path + " is negative");
        }
    }

    public boolean isFile() {
        return type == FileType.FILE;
    }

    public boolean isDirectory() {
        return type == FileType.DIRECTORY;
    }

    /** The last component of the path, as {@code ls} shows it. */
    public String name() {
        int slash = path.lastIndexOf('/', path.length() - 2);
        String n = path.substring(slash + 1);
        return n.endsWith("/") && n.length() > 1 ? n.substring(0, n.length() - 1) : n;
    }

    public Optional<String> symlinkTarget() {
        return Optional.ofNullable(linkTarget);
    }
}
