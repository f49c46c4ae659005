package dev.airlock.microvm;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;

/**
 * Writes a cpio archive in the "newc" format, the one the kernel unpacks as an initramfs. Every
 * entry is root's, dated 0, so the same content always gives the same archive. Parent directories
 * are written before their children, once each (mode 0755 unless written explicitly first).
 */
final class Cpio implements AutoCloseable {

    private static final int S_IFDIR = 0040000, S_IFREG = 0100000, S_IFLNK = 0120000, S_IFCHR = 0020000;

    private final OutputStream out;
    private final Set<String> directories = new HashSet<>();
    private long written;
    private int nextInode = 1;

    Cpio(OutputStream out) {
        this.out = out;
    }

    /** A directory with {@code mode} (permission bits); {@code path} is relative, such as {@code usr/local}. */
    void directory(String path, int mode) throws IOException {
        if (directories.contains(path)) {
            return;
        }
        parents(path);
        entry(path, S_IFDIR | mode, 2, 0, 0, new byte[0]);
        directories.add(path);
    }

    void file(String path, int mode, byte[] content) throws IOException {
        parents(path);
        entry(path, S_IFREG | mode, 1, 0, 0, content);
    }

    void symlink(String path, String target) throws IOException {
        parents(path);
        entry(path, S_IFLNK | 0777, 1, 0, 0, target.getBytes(StandardCharsets.UTF_8));
    }

    void characterDevice(String path, int mode, int major, int minor) throws IOException {
        parents(path);
        entry(path, S_IFCHR | mode, 1, major, minor, new byte[0]);
    }

    private void parents(String path) throws IOException {
        int slash = path.lastIndexOf('/');
        if (slash > 0) {
            directory(path.substring(0, slash), 0755);
        }
    }

    private void entry(String path, int mode, int links, int rdevMajor, int rdevMinor, byte[] content) throws IOException {
        if (path.isEmpty() || path.startsWith("/") || path.endsWith("/")) {
            throw new IllegalArgumentException("cpio paths are relative, without a trailing slash: '" + path + "'");
        }
        byte[] name = (path + "\0").getBytes(StandardCharsets.UTF_8);
        StringBuilder header = new StringBuilder("070701");
        for (long field : new long[] {nextInode++, mode, 0, 0, links, 0, content.length, 0, 0, rdevMajor, rdevMinor, name.length, 0}) {
            header.append(String.format("%08x", field));
        }
        write(header.toString().getBytes(StandardCharsets.US_ASCII));
        write(name);
        pad();
        write(content);
        pad();
    }

    private void write(byte[] bytes) throws IOException {
        out.write(bytes);
        written += bytes.length;
    }

    private void pad() throws IOException {
        while (written % 4 != 0) {
            out.write(0);
            written++;
        }
    }

    /** Writes the trailer; the stream stays open. */
    @Override
    public void close() throws IOException {
        entry("TRAILER!!!", 0, 1, 0, 0, new byte[0]);
        out.flush();
    }
}
