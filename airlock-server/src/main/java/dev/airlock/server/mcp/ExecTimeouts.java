package dev.airlock.server.mcp;

import java.time.Duration;

/** Wall-clock budgets a tool call may ask for. Long enough for real work, short enough for a chat. */
final class ExecTimeouts {

    static final int MAX_SECONDS = 3600;
    static final Duration DEFAULT = Duration.ofSeconds(30);

    private ExecTimeouts() {
    }

    static Duration of(Double seconds) {
        return seconds == null ? DEFAULT : Duration.ofMillis(Math.round(seconds * 1000));
    }
}
