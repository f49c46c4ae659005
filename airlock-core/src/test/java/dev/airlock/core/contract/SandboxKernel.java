package dev.airlock.core.contract;

/**
 * Which kernel serves a sandbox's system calls. It decides how some controls show from inside
 * (which errno a refusal carries, what /proc holds, what a limit ends), never whether they hold: a
 * case of the contract whose outcome differs asserts each kernel's outcome, with the reason, and
 * none is skipped. A driver says which it is through {@link DriverContract#kernel()}.
 */
public enum SandboxKernel {

    /**
     * The host's own kernel, behind namespaces, cgroups, masked paths and a seccomp filter (runc,
     * crun). Sandbox processes are host processes, each execution can have a cgroup of its own.
     */
    HOST,

    /**
     * gVisor's Sentry, a kernel in user space (runsc). Sandbox processes are the Sentry's tasks,
     * not host processes; the host cgroup holds the Sentry and its gofer, not the code; /proc is the
     * Sentry's own; the Sentry checks permissions before the read-only mount (EACCES, not EROFS),
     * knows no route but loopback (EHOSTUNREACH, not ENETUNREACH), and turns every seccomp refusal
     * into EPERM.
     */
    GVISOR
}
