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
    GVISOR,

    /**
     * A Linux kernel of its own in a virtual machine (the microvm driver's QEMU guest), behind the
     * same seccomp filter, cgroup limits and masked paths as HOST, so its refusals carry the host
     * kernel's errnos. Sandbox processes are the guest's, never host processes (the host sees only
     * the VMM); /proc is the guest kernel's, so which of its files exist is the guest's kernel's
     * build, not the host's; the guest has no user namespace of ours, so a file of the guest's
     * root shows as owned by 0, the guest's root, which is no host account.
     */
    GUEST
}
