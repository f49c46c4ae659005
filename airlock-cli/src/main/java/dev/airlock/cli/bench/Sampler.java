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
