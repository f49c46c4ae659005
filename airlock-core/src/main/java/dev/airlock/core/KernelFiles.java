package dev.airlock.core;

import java.io.FileInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Reads the small files the kernel makes up on demand ({@code /proc}, {@code /sys}), the one way
 * that works for all of them. {@code Files.readString} does not: the file's size is 0, so the JDK
 * first reads a single byte, and a sysctl under {@code /proc/sys} answers the next read, at offset
 * 1, with end-of-file ({@code max_user_namespaces} of 96365 reads as "9"). Here the first read
 * asks for the whole buffer, which a sysctl fills at once; seq files fill it over further reads.
 */
public final class KernelFiles {

    /** Enough for every file read this way (status, cgroup, cmdline, sysctls); more is cut off. */
    public static final int MAX_BYTES = 64 * 1024;

    private KernelFiles() {
    }

    /** The file's text (UTF-8, at most {@link #MAX_BYTES} of it), without surrounding whitespace. */
    public static String read(Path file) throws IOException {
        byte[] buffer = new byte[MAX_BYTES];
        int length = 0;
        try (FileInputStream in = new FileInputStream(file.toFile())) {
            int n;
            while (length < buffer.length && (n = in.read(buffer, length, buffer.length - length)) > 0) {
                length += n;
            }
        }
        return new String(Arrays.copyOf(buffer, length), StandardCharsets.UTF_8).strip();
    }

    /** {@link #read}, or {@code ""} when the file is missing or unreadable (a kernel without it). */
    public static String readOrEmpty(Path file) {
        try {
            return read(file);
        } catch (IOException e) {
            return "";
        }
    }
}
