package dev.airlock.client;

import java.util.Locale;

/** Why an execution ended. Exactly one applies; check it before trusting the exit code. */
public enum EndReason {
    /** The process exited on its own; the exit code is its own. */
    EXITED,
    /** The process was killed by a signal (exit code 128 + signal). */
    SIGNALED,
    /** The wall-clock budget ran out and the server killed the process tree. */
    TIMED_OUT,
    /** The sandbox hit its memory limit and the kernel killed the process. */
    OOM_KILLED,
    /** The request was abandoned, or the sandbox was destroyed, while it ran. */
    CANCELLED,
    /** The program could not be started (not found, not executable). */
    START_FAILED,
    /** The sandbox's agent (its PID 1) was killed from inside, and the sandbox ended with it; the output before is kept. */
    AGENT_KILLED,
    /** A reason this client version does not know; read {@link ExecResult#message()}. */
    UNKNOWN;

    static EndReason fromWire(String s) {
        if (s == null) {
            return UNKNOWN;
        }
        try {
            return valueOf(s.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            return UNKNOWN;
        }
    }
}
