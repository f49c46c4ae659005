package dev.airlock.oci;

import dev.airlock.core.Printable;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The tmpfs a driver instance keeps its files on: the shared image root, each sandbox's bundle, run
 * directory and /proc views. A sandbox's mount table names each bind mount's source by its path
 * within the source's file system, so with the files on a file system of their own it shows
 * {@code /rootfs} and {@code /sandboxes/<id>/run}, never the host's state directory. Mounted in
 * the host's mount namespace for the instance's life; a crashed instance's is unmounted when its
 * state is reaped.
 */
final class InstanceTmpfs {

    /**
     * The most the instance's files may take (memory, as used): the image root holds the agent and
     * empty mount points, a sandbox's directory its bundle, log and CA bundle, some 300 KiB at most.
     * Never more than the state directory's own file system has free when the instance starts, so
     * moving the files onto a tmpfs of their own does not raise how much they may take.
     */
    static final long MAX_BYTES = 1L << 30;
    /** A tmpfs of size 0 would be unbounded: one this small just fails the first write with ENOSPC. */
    private static final long MIN_BYTES = 4096;
    private static final long COMMAND_TIMEOUT_SECONDS = 30;
    private static final int MAX_MESSAGE_CHARS = 300;

    private InstanceTmpfs() {
    }

    /**
     * Mounts a fresh tmpfs (mode 0711, not even the image's set-id bits honoured) on {@code dir}, of
     * {@link #MAX_BYTES} or what {@code dir}'s file system has free, whichever is less.
     */
    static void mount(Path dir) throws IOException {
        long bytes = Math.max(MIN_BYTES, Math.min(MAX_BYTES, Files.getFileStore(dir).getUsableSpace()));
        run("mount", "-t", "tmpfs", "-o", "mode=0711,nosuid,nodev,size=" + bytes, "airlock", dir.toString());
    }

    /**
     * Detaches the tmpfs on {@code dir} if there is one. Lazily: a runtime process still inside it
     * keeps it until it ends, and the directory is free at once.
     */
    static void unmount(Path dir) {
        if (!isMountPoint(dir)) {
            return;
        }
        try {
            run("umount", "--lazy", dir.toString());
        } catch (IOException e) {
            // still mounted: the leak check shows it, and the next reap tries again
        }
    }

    /** Whether something is mounted on {@code dir}: it lies on another device than its parent. */
    static boolean isMountPoint(Path dir) {
        try {
            Path parent = dir.toAbsolutePath().getParent();
            return parent != null && Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)
                    && !Files.getAttribute(dir, "unix:dev", LinkOption.NOFOLLOW_LINKS).equals(Files.getAttribute(parent, "unix:dev"));
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    private static void run(String program, String... args) throws IOException {
        Path binary = OciRuntime.locate(program);
        if (binary == null) {
            throw new IOException("no '" + program + "' on this host (install util-linux)");
        }
        List<String> command = new ArrayList<>(List.of(binary.toString()));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        byte[] out = p.getInputStream().readNBytes(MAX_MESSAGE_CHARS);
        // Finished even when the caller is being cancelled: a half-done unmount would leave the tmpfs behind.
        boolean interrupted = Thread.interrupted();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(COMMAND_TIMEOUT_SECONDS);
        try {
            while (true) {
                try {
                    if (p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                        break;
                    }
                    p.destroyForcibly();
                    throw new IOException(program + " did not finish within " + COMMAND_TIMEOUT_SECONDS + "s");
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        if (p.exitValue() != 0) {
            throw new IOException(program + " failed: " + Printable.of(new String(out, StandardCharsets.UTF_8).strip(), MAX_MESSAGE_CHARS));
        }
    }
}
