package dev.airlock.cli.verify;

import dev.airlock.core.KernelFiles;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/** The host's process table, read from /proc: what verify checks from outside the sandboxes. */
final class HostProcesses {

    /** One host process: pid, real uid, command line (NULs as spaces), cgroup lines. */
    record HostProcess(long pid, long uid, String cmdline, String cgroup) {
    }

    private HostProcesses() {
    }

    static List<HostProcess> all() {
        List<HostProcess> found = new ArrayList<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
            for (Path proc : procs) {
                try {
                    String cmd = KernelFiles.read(proc.resolve("cmdline")).replace('\0', ' ').trim();
                    String cgroup = KernelFiles.read(proc.resolve("cgroup"));
                    long uid = -1;
                    for (String line : Files.readAllLines(proc.resolve("status"))) {
                        if (line.startsWith("Uid:")) {
                            uid = Long.parseLong(line.split("\\s+")[1]);
                            break;
                        }
                    }
                    found.add(new HostProcess(Long.parseLong(proc.getFileName().toString()), uid, cmd, cgroup));
                } catch (IOException | RuntimeException e) {
                    // the process ended while we looked
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc: " + e.getMessage(), e);
        }
        return found;
    }

    /** Processes whose command line contains {@code marker} (other than this JVM). */
    static List<HostProcess> withCommandLine(String marker) {
        long self = ProcessHandle.current().pid();
        return all().stream().filter(p -> p.pid() != self && p.cmdline().contains(marker)).toList();
    }

    /** Processes in the cgroup of a sandbox of {@code target} whose id starts with {@code prefix}. */
    static List<HostProcess> inSandboxes(VerifyTarget target, String prefix) {
        String marker = "/" + target.cgroupParent() + "/" + prefix;
        return all().stream().filter(p -> p.cgroup().contains(marker)).toList();
    }

    static String describe(List<HostProcess> ps) {
        return String.join("; ", ps.stream().map(p -> "pid " + p.pid() + " uid " + p.uid() + " '" + p.cmdline() + "'").toList());
    }

    /** Polls {@code condition} every 50 ms for up to {@code millis}; returns its last value. */
    static boolean eventually(long millis, BooleanSupplier condition) {
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

    /** The pid of process {@code pid} in its own (innermost) pid namespace, from NSpid; -1 when it is gone. */
    static long namespacePid(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith("NSpid:")) {
                    String[] ids = line.trim().split("\\s+");
                    return Long.parseLong(ids[ids.length - 1]);
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    /** Resident memory of process {@code pid}, in bytes (VmRSS); 0 when it is gone. */
    static long rss(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.split("\\s+")[1]) * 1024;
                }
            }
        } catch (IOException e) {
            return 0;
        }
        return 0;
    }
}
