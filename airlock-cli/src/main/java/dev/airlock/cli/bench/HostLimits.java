package dev.airlock.cli.bench;

import dev.airlock.core.KernelFiles;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * The host limits that N idle sandboxes need room under, checked before the memory cases create
 * them, so that a host too small for a level is a note naming the limit and how to raise it, not
 * a create failing halfway with a runtime's error. Each idle runc sandbox holds one process (its
 * agent) in the {@code airlock} cgroup parent, one file descriptor in this JVM (its agent's
 * channel) and about 1 MiB of memory; the figures below leave room over that for the runtime's
 * processes while one starts and for the creators' own files. Other per-sandbox budgets (user
 * namespaces, inotify, kernel keys) are kept per host uid, and every sandbox has a uid range of
 * its own, so they do not add up across sandboxes.
 */
final class HostLimits {

    static final int FILES_PER_SANDBOX = 2;
    static final int PIDS_PER_SANDBOX = 2;
    static final long BYTES_PER_SANDBOX = 2L << 20;
    private static final int SPARE_FILES = 256;
    private static final long SPARE_BYTES = 512L << 20;
    private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");

    private HostLimits() {
    }

    /** The first limit too low for {@code sandboxes} more idle sandboxes, as a sentence; null if none is. */
    static String shortOf(int sandboxes) throws IOException {
        long files = softLimit("Max open files");
        long openFiles = count(Path.of("/proc/self/fd"));
        if (files > 0 && files - openFiles < (long) sandboxes * FILES_PER_SANDBOX + SPARE_FILES) {
            return String.format("this process may open %d files (%d open already), and each sandbox needs %d: raise ulimit -n"
                    + " (LimitNOFILE= in a systemd unit) to at least %d", files, openFiles, FILES_PER_SANDBOX,
                    openFiles + (long) sandboxes * FILES_PER_SANDBOX + SPARE_FILES);
        }
        for (Path parent : new Path[]{CGROUP_ROOT.resolve("airlock"), CGROUP_ROOT.resolve("pids").resolve("airlock")}) {
            long max = readLong(parent.resolve("pids.max"));
            long current = readLong(parent.resolve("pids.current"));
            if (max > 0 && current >= 0 && max - current < (long) sandboxes * PIDS_PER_SANDBOX) {
                return String.format("%s/pids.max is %d (%d in use), and each sandbox needs %d: raise it to at least %d", parent, max,
                        current, PIDS_PER_SANDBOX, current + (long) sandboxes * PIDS_PER_SANDBOX);
            }
        }
        long threads = threadsOnHost();
        for (String sysctl : new String[]{"kernel.pid_max", "kernel.threads-max"}) {
            long max = readLong(Path.of("/proc/sys", sysctl.replace('.', '/')));
            if (max > 0 && threads >= 0 && max - threads < (long) sandboxes * PIDS_PER_SANDBOX) {
                return String.format("%s is %d (%d threads on the host), and each sandbox needs %d: raise it (sysctl -w %s=%d)", sysctl, max,
                        threads, PIDS_PER_SANDBOX, sysctl, threads + (long) sandboxes * PIDS_PER_SANDBOX);
            }
        }
        long available = memAvailable();
        if (available < sandboxes * BYTES_PER_SANDBOX + SPARE_BYTES) {
            return String.format("the host has %d MiB available, less than %d MiB per sandbox and %d MiB to spare", available >> 20,
                    BYTES_PER_SANDBOX >> 20, SPARE_BYTES >> 20);
        }
        return null;
    }

    /** The soft limit of one row of /proc/self/limits; -1 when unlimited or unreadable. */
    private static long softLimit(String row) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
            if (line.startsWith(row)) {
                String soft = line.substring(row.length()).trim().split("\\s+")[0];
                return soft.equals("unlimited") ? -1 : Long.parseLong(soft);
            }
        }
        return -1;
    }

    /** Threads on the whole host: the total of /proc/loadavg's "running/total" field; -1 if unreadable. */
    private static long threadsOnHost() throws IOException {
        String[] fields = KernelFiles.read(Path.of("/proc/loadavg")).split("\\s+");
        return fields.length > 3 && fields[3].contains("/") ? Long.parseLong(fields[3].substring(fields[3].indexOf('/') + 1)) : -1;
    }

    /** The host's MemAvailable, in bytes. */
    static long memAvailable() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith("MemAvailable:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IOException("/proc/meminfo has no MemAvailable line");
    }

    private static long count(Path dir) throws IOException {
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.count();
        }
    }

    /** A file holding one number; -1 when it is missing or says "max". */
    private static long readLong(Path file) throws IOException {
        if (!Files.isReadable(file)) {
            return -1;
        }
        // in one read: a sysctl answers a read at a non-zero offset with end-of-file
        String text = KernelFiles.read(file);
        return text.equals("max") ? -1 : Long.parseLong(text);
    }
}
