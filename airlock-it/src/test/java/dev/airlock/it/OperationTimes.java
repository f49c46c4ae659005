package dev.airlock.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * What a load run saw, per operation: how long each call took, how many the server refused with
 * its documented 429, and every other failure with its message. Thread-safe; one per run.
 */
final class OperationTimes {

    /** The most failure messages kept for the report; the count is always exact. */
    private static final int KEPT_FAILURES = 20;

    private final Map<String, ConcurrentLinkedQueue<Long>> nanos = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> quotaRefusals = new ConcurrentHashMap<>();
    private final AtomicLong failures = new AtomicLong();
    private final ConcurrentLinkedQueue<String> failureMessages = new ConcurrentLinkedQueue<>();

    /** Runs {@code call} as one {@code operation}, timing it; a failure is recorded and rethrown. */
    <T> T time(String operation, Supplier<T> call) {
        long start = System.nanoTime();
        try {
            T result = call.get();
            nanos.computeIfAbsent(operation, k -> new ConcurrentLinkedQueue<>()).add(System.nanoTime() - start);
            return result;
        } catch (RuntimeException | AssertionError e) {
            if (isQuotaRefusal(e)) {
                quotaRefusals.computeIfAbsent(operation, k -> new AtomicLong()).incrementAndGet();
            } else {
                failed(operation, e);
            }
            throw e;
        }
    }

    /** A failure found outside {@link #time}, such as a wrong result. */
    void failed(String operation, Throwable e) {
        if (failures.incrementAndGet() <= KEPT_FAILURES) {
            failureMessages.add(operation + ": " + e);
        }
    }

    private static boolean isQuotaRefusal(Throwable e) {
        return e instanceof dev.airlock.client.QuotaExceededException || e instanceof McpLoadClient.QuotaRefused;
    }

    long failures() {
        return failures.get();
    }

    List<String> failureMessages() {
        return List.copyOf(failureMessages);
    }

    long calls() {
        return nanos.values().stream().mapToLong(ConcurrentLinkedQueue::size).sum();
    }

    long quotaRefusals() {
        return quotaRefusals.values().stream().mapToLong(AtomicLong::get).sum();
    }

    /** Successful calls of {@code operation}. */
    long calls(String operation) {
        ConcurrentLinkedQueue<Long> q = nanos.get(operation);
        return q == null ? 0 : q.size();
    }

    /** One line per operation: count, p50, p99 and max in milliseconds, and 429s. */
    String report(Duration elapsed) {
        StringBuilder b = new StringBuilder(String.format("%-24s %7s %9s %9s %9s %6s%n", "operation", "calls", "p50 ms", "p99 ms", "max ms", "429s"));
        for (Map.Entry<String, ConcurrentLinkedQueue<Long>> e : new TreeMap<>(nanos).entrySet()) {
            List<Long> sorted = new ArrayList<>(e.getValue());
            Collections.sort(sorted);
            AtomicLong refused = quotaRefusals.get(e.getKey());
            b.append(String.format("%-24s %7d %9.2f %9.2f %9.2f %6d%n", e.getKey(), sorted.size(), ms(percentile(sorted, 50)),
                    ms(percentile(sorted, 99)), ms(sorted.getLast()), refused == null ? 0 : refused.get()));
        }
        b.append(String.format("%d calls in %.1f s (%.1f/s), %d refused with 429, %d failed", calls(), elapsed.toMillis() / 1000.0,
                calls() * 1000.0 / Math.max(1, elapsed.toMillis()), quotaRefusals(), failures()));
        return b.toString();
    }

    /** The nearest-rank percentile of sorted values. */
    static long percentile(List<Long> sorted, int p) {
        int rank = (int) Math.ceil(p / 100.0 * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }

    private static double ms(long nanos) {
        return nanos / 1e6;
    }
}
