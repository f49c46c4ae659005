package dev.airlock.core;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * What one execution produced. Output is what the process wrote up to its end (also when it timed
 * out or was killed), capped at the sandbox's output limit.
 *
 * @param exitCode  the process's exit code; 128 + signal when killed by a signal; 127 when it
 *                  could not start; -1 when cancelled before an exit status was known
 * @param truncated whether stdout or stderr went over the output limit and was cut
 */
public record ExecResult(
        byte[] stdout,
        byte[] stderr,
        int exitCode,
        EndReason endReason,
        boolean truncated,
        Duration duration,
        String message) {

    public String stdoutText() {
        return new String(stdout, StandardCharsets.UTF_8);
    }

    public String stderrText() {
        return new String(stderr, StandardCharsets.UTF_8);
    }

    public boolean timedOut() {
        return endReason == EndReason.TIMED_OUT;
    }

    public boolean oomKilled() {
        return endReason == EndReason.OOM_KILLED;
    }
}
