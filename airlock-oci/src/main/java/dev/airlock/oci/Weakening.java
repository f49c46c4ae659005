package dev.airlock.oci;

/**
 * A control deliberately left out of every sandbox, so that {@code airlock verify --unsafe
 * --unsafe-disable ...} can show that it notices the breakage. Never reachable from the server's
 * configuration: only the verify command's explicit, loudly logged flags set one.
 */
public enum Weakening {
    /** No seccomp filter at all: every system call and socket family reaches the kernel. */
    NO_SECCOMP,
    /** No network namespace of its own: the sandbox shares the host's interfaces and routes. */
    HOST_NETWORK_NAMESPACE
}
