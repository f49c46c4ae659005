package dev.airlock.core.contract;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A read-write tmpfs mounted on the host below a directory that sandboxes get from the host (say
 * {@code /usr/share/<token>}), as GPU drivers, WSL2 and a separate /usr/local put mounts there. Its
 * root is world-writable (mode 1777), so that a write from inside is stopped by the mount's
 * read-only flag, never by a permission. Closing it unmounts it and removes its mount point,
 * whatever the test did.
 */
final class HostSubmount implements AutoCloseable {

    private final Path dir;

    private HostSubmount(Path dir) {
        this.dir = dir;
    }

    static HostSubmount tmpfs(Path dir) throws IOException, InterruptedException {
        Files.createDirectory(dir);
        HostSubmount m = new HostSubmount(dir);
        try {
            run("mount", "-t", "tmpfs", "-o", "size=4m,mode=1777", "tmpfs", dir.toString());
        } catch (IOException | InterruptedException | RuntimeException e) {
            Files.deleteIfExists(dir);
            throw e;
        }
        return m;
    }

    Path dir() {
        return dir;
    }

    @Override
    public void close() throws IOException, InterruptedException {
        try {
            run("umount", "-l", dir.toString());
        } finally {
            Files.deleteIfExists(dir);
        }
    }

    private static void run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: " + out.strip());
        }
    }
}
