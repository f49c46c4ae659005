package dev.airlock.server;

import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;

import java.time.Instant;
import java.util.List;

/**
 * A process started with {@code "background": true}. A virtual thread waits for it, so its timeout
 * is enforced although no request is waiting.
 */
public record BackgroundProcess(String id, List<String> command, Instant startedAt, Execution execution) {

    public boolean running() {
        return !execution.isDone();
    }

    public ExecResult result() {
        return execution.result();
    }
}
