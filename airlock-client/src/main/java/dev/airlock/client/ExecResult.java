package dev.airlock.client;

import java.time.Duration;
import java.util.Objects;

/**
 * What one execution produced: its output up to its end (also when it timed out or was killed),
 * capped at the sandbox's output limit, and why it ended.
 *
 * @param stdout    standard output as text (invalid UTF-8 was replaced by the server)
 * @param stderr    standard error as text
 * @param exitCode  the exit code; 128 + signal when killed by a signal, 127 when it could not start
 * @param endReason why it ended; {@link EndReason#EXITED} is the only case where the exit code is
 *                  the program's own
 * @param timedOut  the wall-clock budget ran out
 * @param oomKilled the kernel killed it for memory
 * @param truncated stdout or stderr went over the output limit and was cut
 * @param duration  wall-clock time from start to end
 * @param message   the server's explanation when it did not simply exit (may be null)
 */
public record ExecResult(
        String stdout,
        String stderr,
        int exitCode,
        EndReason endReason,
        boolean timedOut,
        boolean oomKilled,
        boolean truncated,
        Duration duration,
        String message) {

    public ExecResult {
        stdout = stdout == null ? "" : stdout;
        stderr = stderr == null ? "" : stderr;
        Objects.requireNonNull(endReason, "endReason");
        duration = duration == null ? Duration.ZERO : duration;
        if (duration.isNegative()) {
            throw new IllegalArgumentException("duration " + duration + " is negative");
        }
    }

    /** The program ran to its end and exited with code 0. */
    public boolean succeeded() {
        return endReason == EndReason.EXITED && exitCode == 0;
    }
}
