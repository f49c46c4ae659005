package dev.airlock.core;

/**
 * Phase timings of one process, for finding where a short command spends its time: with the
 * environment variable {@code AIRLOCK_TRACE} set (to anything but empty or 0), each {@link #mark}
 * prints one line to stderr with the time since the command was launched and since the previous
 * mark. Off, a mark is a read of one constant. The launch time is {@code AIRLOCK_TRACE_T0} (epoch
 * nanoseconds, set by bin/airlock when it starts), else this process's start; the first mark's
 * step counts from {@code AIRLOCK_TRACE_JAVA} (when bin/airlock started Java), so it is the JVM's
 * own start.
 */
public final class Trace {

    private static final boolean ON = enabled(System.getenv("AIRLOCK_TRACE"));
    private static long lastNanos;
    private static long originNanos;

    private Trace() {
    }

    /** Whether marks are printed. */
    public static boolean on() {
        return ON;
    }

    /** Prints {@code phase} with its times, when tracing is on. */
    public static void mark(String phase) {
        if (ON) {
            print(phase);
        }
    }

    private static synchronized void print(String phase) {
        long now = epochNanos();
        if (originNanos == 0) {
            originNanos = epochNanosFrom("AIRLOCK_TRACE_T0", now);
            lastNanos = epochNanosFrom("AIRLOCK_TRACE_JAVA", originNanos);
        }
        System.err.printf("airlock trace: %8.1f ms  +%7.1f  %-28s [%s]%n", (now - originNanos) / 1e6, (now - lastNanos) / 1e6,
                phase, Thread.currentThread().isVirtual() ? "virtual" : Thread.currentThread().getName());
        lastNanos = now;
    }

    private static boolean enabled(String value) {
        return value != null && !value.isEmpty() && !value.equals("0");
    }

    private static long epochNanos() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    /** The epoch nanoseconds in environment variable {@code name}, else this process's start, else {@code fallback}. */
    private static long epochNanosFrom(String name, long fallback) {
        String given = System.getenv(name);
        if (given != null) {
            try {
                return Long.parseLong(given.trim());
            } catch (NumberFormatException e) {
                // fall back to the process's start
            }
        }
        return ProcessHandle.current().info().startInstant()
                .map(i -> i.getEpochSecond() * 1_000_000_000L + i.getNano()).orElse(fallback);
    }
}
