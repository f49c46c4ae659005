package dev.airlock.server;

import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;

import java.time.Instant;
import java.util.List;

/**
 * A process started with {@code "background": true}. A virtual thread waits for it, so its timeout
 * is enforced although no request is waiting. Its output is in {@code output}'s files, not in its
 * result (whose stdout and stderr are empty).
 *
 * @param terminal for a process on a pseudo-terminal ({@code "tty": true}): where WebSockets attach; else null
 */
public record BackgroundProcess(String id, List<String> command, Instant startedAt, Execution execution, SpilledOutput output,
                                ProcessTerminal terminal) {

    /** The most of each stream a process's JSON carries; all of it is at {@code GET .../processes/{pid}/stdout} (or stderr). */
    public static final int OUTPUT_PREVIEW_BYTES = 64 * 1024;

    public boolean running() {
        return !execution.isDone();
    }

    public ExecResult result() {
        return execution.result();
    }
}
