package dev.airlock.server.command;

/**
 * The console's charts: samples of the server's meters, one array per series, all as long as
 * {@code time} (epoch seconds), oldest first.
 */
public record MetricsSeries(long intervalSeconds, long[] time, long[] sandboxes, double[] executionsPerMinute, long[] refusals,
                            long[] egressBytes) {
}
