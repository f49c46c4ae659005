package dev.airlock.server.mcp;

import java.time.Duration;

/** Wall-clock budgets a tool call may ask for. Long enough for real work, short enough for a chat. */
final class ExecTimeouts {

    static final int MAX_SECONDS = 3600;

    private ExecTimeouts() {
    }

    /** The timeout a call asked for, or null: the sandbox's own (its profile's), which the tool descriptions name. */
    static Duration of(Double seconds) {
        return seconds == null ? null : Duration.ofMillis(Math.round(seconds * 1000));
    }
}
