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
    START_FAILED
}
