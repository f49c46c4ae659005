package dev.airlock.core;

import java.util.List;
import java.util.Map;

/**
 * Creates, and destroys, isolated sandboxes of one kind (an OCI runtime, later a microVM). A
 * driver knows how to isolate; it knows nothing of clients, policies or protocols. Every sandbox
 * it returns is running, with its agent connected.
 */
public interface IsolationDriver extends AutoCloseable {

    /** A short name for logs and {@code doctor}, such as {@code oci/runc}. */
    String name();

    /**
     * The name of this driver instance. Ids of the sandboxes it creates carry it, so that what a
     * crashed instance left behind can be found and reaped by the next one.
     */
    String instance();

    /** Checks that {@code spec} can be served before anything is created (image, interpreters). */
    void check(SandboxSpec spec, List<String> requiredPrograms);

    /**
     * Starts a sandbox. On failure nothing of it is left behind.
     *
     * @throws AirlockException if the sandbox cannot be created; the message names the cause
     */
    DriverSandbox create(SandboxId id, SandboxSpec spec);

    /**
     * Removes everything that instances no longer alive left behind: processes, runtime state,
     * cgroups, directories. Safe to call while other instances run.
     *
     * @return what was reaped, one line each, for the operator
     */
    List<String> reapOrphans();

    /** Whether the driver instance named {@code instance} (this one or another) is still alive. */
    boolean isAlive(String instance);

    /** Destroys every sandbox this instance still holds and releases the instance. */
    @Override
    void close();

    /** One running sandbox, as the driver sees it. */
    interface DriverSandbox {

        SandboxId id();

        /** The channel to the sandbox's agent. */
        SandboxAgent agent();

        /** How many processes the kernel has OOM-killed in this sandbox so far. */
        long oomKills();

        /** Kills every process and removes all state of the sandbox. Idempotent. */
        void destroy();

        /**
         * The port on the sandbox's own loopback where its egress proxy is reachable, or 0 when
         * the sandbox has no network (its policy was {@link NetworkPolicy#NONE} at creation).
         */
        default int egressPort() {
            return 0;
        }

        /**
         * Variables the driver adds to every execution's environment (the spec's and the request's
         * own win), such as where the trust bundle for intercepted HTTPS is. Never a secret.
         */
        default Map<String, String> environment() {
            return Map.of();
        }

        /**
         * Replaces the sandbox's network policy; live connections the new policy denies are closed.
         *
         * @throws AirlockException if the sandbox was created without network
         */
        default void updateNetworkPolicy(NetworkPolicy policy) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id()
                    + " was created without network: create it with a network policy to change it later");
        }
    }
}
