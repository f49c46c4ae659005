package dev.airlock.server.live;

import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.server.command.ProcessView;
import dev.airlock.server.output.SpilledOutput;

import java.time.Instant;
import java.util.List;

/**
 * A process started with {@code "background": true}. A virtual thread waits for it, so its timeout
 * is enforced although no request is waiting. Its output is in {@code output}'s files, not in its
 * result (whose stdout and stderr are empty).
 *
 * @param terminal for a process on a pseudo-terminal ({@code "tty": true}): where WebSockets attach; else null
 * @param input    true while it takes {@link dev.airlock.server.command.Command.Input}: from its start if it is on a
 *                 terminal or was started with its standard input open, until that input is closed
 */
public record BackgroundProcess(String id, List<String> command, Instant startedAt, Execution execution, SpilledOutput output,
                                ProcessTerminal terminal, java.util.concurrent.atomic.AtomicBoolean input) implements ProcessView {

    @Override
    public int pid() {
        return execution.pid();
    }

    @Override
    public boolean tty() {
        return terminal != null;
    }

    @Override
    public boolean running() {
        return !execution.isDone();
    }

    @Override
    public ExecResult result() {
        return execution.result();
    }
}
