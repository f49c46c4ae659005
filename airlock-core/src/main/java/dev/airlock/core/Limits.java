package dev.airlock.core;

import java.time.Duration;
import java.util.Locale;

/**
 * Resource budgets of one sandbox. Every field has a default ({@link #DEFAULTS}) and a hard
 * ceiling; values outside {@code [min, max]} are refused with a message naming the field, the
 * value, and the allowed range.
 *
 * @param memoryBytes   cgroup memory limit (no swap); exceeding it OOM-kills the largest process
 * @param pids          cgroup pids limit: processes and threads together
 * @param cpus          CPU quota in cores (1.5 = one and a half cores)
 * @param timeout       wall-clock budget of one execution
 * @param outputBytes   stdout and stderr bytes kept per execution, each; the rest is dropped and the
 *                      result says {@code truncated}
 * @param fileSizeBytes largest file a process may write (RLIMIT_FSIZE)
 * @param openFiles     open file descriptors per process (RLIMIT_NOFILE)
 * @param diskBytes     size of each writable tmpfs (/tmp and /workspace)
 */
public record Limits(
        long memoryBytes,
        int pids,
        double cpus,
        Duration timeout,
        long outputBytes,
        long fileSizeBytes,
        int openFiles,
        long diskBytes) {

    private static final long KIB = 1024, MIB = 1024 * KIB, GIB = 1024 * MIB;

    /** The longest timeout of an execution, here and on a server (its REST API refuses a longer one); declared before DEFAULTS, whose check reads it. */
    public static final Duration MAX_TIMEOUT = Duration.ofHours(24);

    public static final Limits DEFAULTS = new Limits(
            512 * MIB, 256, 1.0, Duration.ofSeconds(30), 1 * MIB, 64 * MIB, 1024, 128 * MIB);

    public Limits {
        checkRange("memory", memoryBytes, 16 * MIB, 64 * GIB, true);
        checkRange("pids", pids, 8, 32768, false);
        if (!(cpus >= 0.01 && cpus <= 1024)) {
            throw AirlockException.invalid("cpus " + cpus + " is out of range: give a number of cores from 0.01 to 1024");
        }
        if (timeout == null || timeout.compareTo(Duration.ofMillis(10)) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0) {
            throw AirlockException.invalid("timeout " + timeout + " is out of range: give 10ms to 24h");
        }
        checkRange("output", outputBytes, 0, 1 * GIB, true);
        checkRange("file size", fileSizeBytes, 1 * KIB, 64 * GIB, true);
        checkRange("open files", openFiles, 16, 1 << 20, false);
        checkRange("disk", diskBytes, 1 * MIB, 64 * GIB, true);
    }

    private static void checkRange(String field, long value, long min, long max, boolean bytes) {
        if (value < min || value > max) {
            throw AirlockException.invalid(field + " " + (bytes ? formatBytes(value) : value) + " is out of range: give "
                    + (bytes ? formatBytes(min) + " to " + formatBytes(max) : min + " to " + max));
        }
    }

    public Limits withMemoryBytes(long v) { return new Limits(v, pids, cpus, timeout, outputBytes, fileSizeBytes, openFiles, diskBytes); }
    public Limits withPids(int v) { return new Limits(memoryBytes, v, cpus, timeout, outputBytes, fileSizeBytes, openFiles, diskBytes); }
    public Limits withCpus(double v) { return new Limits(memoryBytes, pids, v, timeout, outputBytes, fileSizeBytes, openFiles, diskBytes); }
    public Limits withTimeout(Duration v) { return new Limits(memoryBytes, pids, cpus, v, outputBytes, fileSizeBytes, openFiles, diskBytes); }
    public Limits withOutputBytes(long v) { return new Limits(memoryBytes, pids, cpus, timeout, v, fileSizeBytes, openFiles, diskBytes); }
    public Limits withFileSizeBytes(long v) { return new Limits(memoryBytes, pids, cpus, timeout, outputBytes, v, openFiles, diskBytes); }
    public Limits withOpenFiles(int v) { return new Limits(memoryBytes, pids, cpus, timeout, outputBytes, fileSizeBytes, v, diskBytes); }
    public Limits withDiskBytes(long v) { return new Limits(memoryBytes, pids, cpus, timeout, outputBytes, fileSizeBytes, openFiles, v); }

    /**
     * Parses a size such as {@code 256m}, {@code 1g}, {@code 512k}, {@code 1048576} or {@code 1.5g}
     * (binary units). {@code field} names the option in the error message.
     */
    public static long parseSize(String field, String text) {
        if (text == null || text.isBlank()) {
            throw AirlockException.invalid(field + " is empty: give a size such as 256m or 1g");
        }
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.endsWith("ib")) {
            t = t.substring(0, t.length() - 2);
        } else if (t.endsWith("b") && t.length() > 1 && Character.isLetter(t.charAt(t.length() - 2))) {
            t = t.substring(0, t.length() - 1);
        }
        long unit = 1;
        char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
        switch (last) {
            case 'k' -> unit = KIB;
            case 'm' -> unit = MIB;
            case 'g' -> unit = GIB;
            case 't' -> unit = 1024 * GIB;
            default -> { }
        }
        String number = unit == 1 ? t : t.substring(0, t.length() - 1);
        try {
            if (!number.matches("[0-9]+(\\.[0-9]+)?")) {
                throw new NumberFormatException(); // Double.parseDouble would also take "1d", "1e3", "0x1p3", "Infinity"
            }
            double value = Double.parseDouble(number);
            if (!(value >= 0) || Double.isInfinite(value) || value * unit > Long.MAX_VALUE) {
                throw new NumberFormatException();
            }
            return (long) (value * unit);
        } catch (NumberFormatException e) {
            throw AirlockException.invalid(field + " '" + Printable.of(text) + "' is not a size: give a number with an optional unit k, m or g, such as 256m or 1g");
        }
    }

    public static String formatBytes(long bytes) {
        if (bytes >= GIB && bytes % GIB == 0) return bytes / GIB + "g";
        if (bytes >= MIB && bytes % MIB == 0) return bytes / MIB + "m";
        if (bytes >= KIB && bytes % KIB == 0) return bytes / KIB + "k";
        return Long.toString(bytes);
    }
}
