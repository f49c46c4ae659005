package dev.airlock.cli.bench;

import java.util.Arrays;

/**
 * One case of the benchmark: the median and the 10th and 90th percentiles of its samples, in
 * {@code unit}, and the ratio of its median to the median of {@code baseline} (null: none).
 */
public record Stats(String section, String name, double median, double p10, double p90, String unit, String baseline, Double ratio) {

    /** Latency cases, the original table: milliseconds, ratio to bare. */
    public static final String LATENCY = "latency";

    public static Stats of(String section, String name, String unit, double[] samples) {
        return new Stats(section, name, percentile(samples, 0.5), percentile(samples, 0.1), percentile(samples, 0.9), unit, null, null);
    }

    /** A latency row "{@code name}, p99": the 99th percentile of {@code samples} (the largest, below 100 samples). */
    public static Stats p99(String name, double[] samples) {
        double p99 = percentile(samples, 0.99);
        return new Stats(LATENCY, name + ", p99", p99, p99, p99, "ms", null, null);
    }

    /** The sample at quantile {@code q} (0 to 1) of {@code samples}, nearest rank from below; the largest at 0.99 of fewer than 100. */
    public static double percentile(double[] samples, double q) {
        double[] s = samples.clone();
        Arrays.sort(s);
        return s[Math.min(s.length - 1, (int) (s.length * q))];
    }

    /** The same figures in {@code other} section. */
    public Stats in(String other) {
        return new Stats(other, name, median, p10, p90, unit, baseline, ratio);
    }

    /** The same figures with the ratio of this median to {@code base}'s. */
    public Stats relativeTo(Stats base) {
        return new Stats(section, name, median, p10, p90, unit, base.name(), median / base.median());
    }
}
