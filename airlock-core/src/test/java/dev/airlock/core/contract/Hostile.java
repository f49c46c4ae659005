package dev.airlock.core.contract;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * What the hostile tests share (the driver contract's and a driver's own): a Python prelude that reports the outcome of an attempt as one
 * precise line ({@code label: ERRNO_NAME strerror}, or {@code label: ok}), a raw-syscall helper,
 * and a look at the host's process table.
 */
public final class Hostile {

    private Hostile() {
    }

    /**
     * Python 3 prelude. {@code attempt(label, fn)} prints {@code "label: ok"} or
     * {@code "label: EPERM Operation not permitted"}; {@code sc(nr, *args)} makes a raw system call and
     * returns {@code "result=R errno=E"}.
     */
    public static final String PRELUDE = """
            import ctypes, errno, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            def attempt(label, fn):
                try:
                    fn()
                    print(f"{label}: ok", flush=True)
                except OSError as e:
                    print(f"{label}: {errno.errorcode.get(e.errno, e.errno)} {e.strerror}", flush=True)
            def sc(nr, *args):
                ctypes.set_errno(0)
                r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
                return f"result={r} errno={ctypes.get_errno()}"
            def write_to(path, mode="w"):
                with open(path, mode) as f:
                    f.write("x")
            """;

    /** The prelude followed by {@code body}. */
    public static String py(String body) {
        return PRELUDE + body;
    }

    /** One host process: its pid, real uid, state letter and command line (NULs as spaces). */
    public record HostProcess(long pid, long uid, String state, String cmdline) {
    }

    /** Host processes whose command line contains {@code marker}. */
    public static List<HostProcess> hostProcessesWith(String marker) {
        List<HostProcess> found = new ArrayList<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
            for (Path proc : procs) {
                try {
                    String cmd = Files.readString(proc.resolve("cmdline")).replace('\0', ' ').trim();
                    if (!cmd.contains(marker)) {
                        continue;
                    }
                    long uid = -1;
                    String state = "?";
                    for (String line : Files.readAllLines(proc.resolve("status"))) {
                        if (line.startsWith("Uid:")) {
                            uid = Long.parseLong(line.split("\\s+")[1]);
                        } else if (line.startsWith("State:")) {
                            state = line.split("\\s+")[1];
                        }
                    }
                    found.add(new HostProcess(Long.parseLong(proc.getFileName().toString()), uid, state, cmd));
                } catch (IOException | RuntimeException e) {
                    // the process ended while we looked
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc", e);
        }
        return found;
    }

    /** Polls {@code condition} every 50 ms for up to {@code millis}; returns its last value. */
    public static boolean eventually(long millis, BooleanSupplier condition) {
        long deadline = System.nanoTime() + millis * 1_000_000;
        while (true) {
            if (condition.getAsBoolean()) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return condition.getAsBoolean();
            }
        }
    }

    /** A token unlikely to appear anywhere by chance. */
    public static String token(String what) {
        return "airlock-hostile-" + what + "-" + Long.toHexString(System.nanoTime()) + Long.toHexString(Double.doubleToLongBits(Math.random()));
    }
}
