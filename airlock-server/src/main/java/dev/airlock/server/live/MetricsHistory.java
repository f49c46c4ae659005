package dev.airlock.server.live;

import dev.airlock.server.command.MetricsSeries;

import java.time.Clock;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * The last hour of the server's metrics, for the console's Overview charts: every
 * {@link #INTERVAL} a {@link Reading} of the same meters {@code /metrics} shows (sandboxes live,
 * executions ended, refusals, egress bytes), kept in a ring of {@link #SAMPLES}. The ring is
 * fixed-size primitive arrays: 360 samples of five longs, 14 KiB whatever the load, allocated
 * once. Nothing is kept across restarts: the history starts when the server does.
 */
public final class MetricsHistory implements AutoCloseable {

    /** How often a sample is taken. */
    static final Duration INTERVAL = Duration.ofSeconds(10);
    /** How many samples are kept: one hour at {@link #INTERVAL}. */
    static final int SAMPLES = 360;

    /** The meters, read at one instant; all but {@code sandboxes} only grow. */
    public record Reading(long sandboxes, long executions, long refusals, long egressBytes) {
    }


    private final Supplier<Reading> meters;
    private final Clock clock;
    private final long[] time = new long[SAMPLES];
    private final long[] sandboxes = new long[SAMPLES];
    private final long[] executions = new long[SAMPLES];
    private final long[] refusals = new long[SAMPLES];
    private final long[] egressBytes = new long[SAMPLES];
    private int next;
    private int size;
    private final Thread sampler;

    /** Starts sampling {@code meters} at once and every {@link #INTERVAL}. */
    public MetricsHistory(Supplier<Reading> meters) {
        this(meters, Clock.systemUTC(), true);
    }

    /** {@code sample} false: no thread; the caller calls {@link #sample()} (tests). */
    public MetricsHistory(Supplier<Reading> meters, Clock clock, boolean sample) {
        this.meters = meters;
        this.clock = clock;
        this.sampler = sample ? Thread.ofVirtual().name("airlock-metrics-history").start(this::loop) : null;
    }

    private void loop() {
        try {
            while (!Thread.currentThread().isInterrupted()) {
                sample();
                Thread.sleep(INTERVAL);
            }
        } catch (InterruptedException e) {
            // closed
        }
    }

    /** Takes one sample now; the oldest goes once {@link #SAMPLES} are kept. */
    synchronized void sample() {
        Reading r = meters.get();
        time[next] = clock.instant().getEpochSecond();
        sandboxes[next] = r.sandboxes();
        executions[next] = r.executions();
        refusals[next] = r.refusals();
        egressBytes[next] = r.egressBytes();
        next = (next + 1) % SAMPLES;
        size = Math.min(size + 1, SAMPLES);
    }

    /** The kept samples, oldest first, and a reading of now after them. */
    public synchronized MetricsSeries series() {
        int n = size + 1;
        long[] t = new long[n];
        long[] live = new long[n];
        long[] exec = new long[n];
        long[] refused = new long[n];
        long[] bytes = new long[n];
        int first = (next - size + SAMPLES) % SAMPLES;
        for (int i = 0; i < size; i++) {
            int k = (first + i) % SAMPLES;
            t[i] = time[k];
            live[i] = sandboxes[k];
            exec[i] = executions[k];
            refused[i] = refusals[k];
            bytes[i] = egressBytes[k];
        }
        Reading now = meters.get();
        t[size] = clock.instant().getEpochSecond();
        live[size] = now.sandboxes();
        exec[size] = now.executions();
        refused[size] = now.refusals();
        bytes[size] = now.egressBytes();
        // counters become what happened in each interval; the first point has no interval before it
        double[] perMinute = new double[n];
        long[] refusedIn = new long[n];
        long[] bytesIn = new long[n];
        for (int i = 1; i < n; i++) {
            long seconds = Math.max(1, t[i] - t[i - 1]);
            perMinute[i] = Math.max(0, exec[i] - exec[i - 1]) * 60.0 / seconds;
            refusedIn[i] = Math.max(0, refused[i] - refused[i - 1]);
            bytesIn[i] = Math.max(0, bytes[i] - bytes[i - 1]);
        }
        return new MetricsSeries(INTERVAL.toSeconds(), t, live, perMinute, refusedIn, bytesIn);
    }

    @Override
    public void close() {
        if (sampler != null) {
            sampler.interrupt();
        }
    }
}
