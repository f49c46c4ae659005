package dev.airlock.core;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The isolation tiers, weakest first: what stands between a sandbox's code and the host kernel. A
 * driver says which tier it gives ({@link IsolationDriver#isolation()}); a profile may require one.
 */
public enum Isolation {
    /** A hardened container: own namespaces, no capabilities, seccomp, read-only root; the host kernel serves every call. */
    CONTAINER("container", "a hardened container (its own namespaces, no capabilities, a seccomp allow-list) on the host's kernel"),
    /** gVisor: a user-space kernel (the Sentry) serves the code's system calls; the host kernel sees only the Sentry's. */
    GVISOR("gvisor", "gVisor, a user-space kernel between the code and the host's kernel"),
    /** A microVM with its own guest kernel behind a hypervisor. */
    MICROVM("microvm", "a microVM with its own kernel");

    private final String id;
    private final String description;

    Isolation(String id, String description) {
        this.id = id;
        this.description = description;
    }

    /** The name in policies and API answers: {@code container}, {@code gvisor}, {@code microvm}. */
    public String id() {
        return id;
    }

    /**
     * Whether a sandbox's processes and memory can be saved on this tier (a memory snapshot): gVisor
     * (runsc's checkpoint), the microVM (QEMU's saved state and RAM, for guests of stored images); not
     * the container tier (CRIU does not run on this host's kernel).
     */
    public boolean savesProcesses() {
        return this != CONTAINER;
    }

    /** One phrase for people and models: what the code runs in. */
    public String description() {
        return description;
    }

    public static Isolation parse(String id) {
        for (Isolation i : values()) {
            if (i.id.equals(id == null ? null : id.toLowerCase(Locale.ROOT))) {
                return i;
            }
        }
        throw AirlockException.invalid("unknown isolation '" + Printable.of(id) + "': choose " + names());
    }

    public static String names() {
        return Arrays.stream(values()).map(Isolation::id).collect(Collectors.joining(", "));
    }
}
