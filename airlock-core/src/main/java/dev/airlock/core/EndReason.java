package dev.airlock.core;

/** Why an execution ended. Exactly one applies. */
public enum EndReason {
    /** The process exited on its own; the exit code is its own. */
    EXITED,
    /** The process was killed by a signal it did not get from Airlock (exit code 128 + signal). */
    SIGNALED,
    /** The wall-clock budget ran out and Airlock killed the process tree. */
    TIMED_OUT,
    /** The sandbox hit its memory limit and the kernel killed the process. */
    OOM_KILLED,
    /** A client cancelled, or the sandbox or engine was shut down, while it ran. */
    CANCELLED,
    /** The program could not be started (not found, not executable). */
    START_FAILED,
    /**
     * The sandbox's agent (its PID 1) died under the execution without the host asking, and the
     * sandbox ended with it: something inside killed it. gVisor's Sentry lets the sandbox's own
     * processes signal its init, so code that sends SIGKILL to PID 1 ends its sandbox there (the
     * host's kernel and a guest's drop such signals). The output read before is kept.
     */
    AGENT_KILLED
}
