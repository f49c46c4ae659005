package dev.airlock.client;

import java.time.Duration;

/**
 * The budgets a sandbox actually has, as the server reports them: what was asked for in
 * {@link Limits}, with defaults filled in and sizes in bytes.
 */
public record EffectiveLimits(
        long memoryBytes,
        int pids,
        double cpus,
        Duration timeout,
        long outputBytes,
        long fileSizeBytes,
        int openFiles,
        long diskBytes) {
}
