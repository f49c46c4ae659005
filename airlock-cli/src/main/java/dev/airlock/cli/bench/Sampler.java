package dev.airlock.cli.bench;

/** Times one case at a time: warm-up repetitions, then measured ones, each after an untimed settle. */
public final class Sampler {

    @FunctionalInterface
    public interface Case {
        void once() throws Exception;
    }

    private final int runs;
    private final int warmup;
    private final Progress progress;

    public Sampler(int runs, int warmup, Progress progress) {
        this.runs = runs;
        this.warmup = warmup;
        this.progress = progress;
    }

    /**
     * How long a section that measures a long-running server first works unmeasured, so that what it times is the
     * server's steady state rather than its JIT compiling the paths (a fresh JVM's first hundreds of requests): 15 s,
     * 1 s with {@code --quick}.
     */
    public static int warmUpSeconds(boolean quick) {
        return quick ? 1 : 15;
    }

    /** Runs {@code round} again and again, unmeasured, until {@code seconds} have passed; {@code what} names it in the progress. */
    public static void warmUp(Progress progress, String what, int seconds, Case round) throws Exception {
        progress.begin(what + ": warm-up (" + seconds + " s, unmeasured)", seconds);
        long start = System.nanoTime();
        int reported = 0;
        try {
            while (reported < seconds) {
                round.once();
                for (long passed = (System.nanoTime() - start) / 1_000_000_000L; reported < Math.min(passed, seconds); reported++) {
                    progress.step();
                }
            }
        } finally {
            progress.end();
        }
    }

    public Progress progress() {
        return progress;
    }

    public Stats measure(String name, Case c) throws Exception {
        return measure(name, c, null);
    }

    /** Times {@code c} in milliseconds; {@code settle} runs before each repetition, untimed. */
    public Stats measure(String name, Case c, Case settle) throws Exception {
        return Stats.of(Stats.LATENCY, name, "ms", samples(name, c, settle));
    }

    /** The times of {@code c}, one per measured repetition, in milliseconds, as {@link #measure(String, Case, Case)} takes them. */
    public double[] samples(String name, Case c, Case settle) throws Exception {
        progress.begin(name, warmup + runs);
        double[] ms = new double[runs];
        for (int i = 0; i < warmup + runs; i++) {
            if (settle != null) {
                settle.once();
            }
            long t0 = System.nanoTime();
            c.once();
            long t1 = System.nanoTime();
            if (i >= warmup) {
                ms[i - warmup] = (t1 - t0) / 1e6;
            }
            progress.step();
        }
        progress.end();
        return ms;
    }
}
