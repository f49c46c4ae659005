package dev.airlock.core;

import java.nio.file.Path;
import java.util.Map;

/**
 * What runs on the host beside each sandbox, owned by the {@link Engine} rather than by the
 * isolation driver: the sandbox's egress (its policy proxy, credentials and request approvals).
 * The driver knows none of that. It creates the sandbox's run directory, which it mounts at
 * {@link #RUN_DIR} inside, calls {@link #attach} once before the sandbox starts, and, when the
 * attachment is {@link Attachment#bridged() bridged}, has the agent bridge {@code
 * 127.0.0.1:}{@link #BRIDGE_PORT} inside to {@link #BRIDGE_SOCKET} in that directory.
 */
@FunctionalInterface
public interface SandboxBroker {

    /** Where every driver mounts a sandbox's run directory inside the sandbox. */
    String RUN_DIR = "/run/airlock";

    /** The unix socket, in the run directory, that a bridged attachment listens on. */
    String BRIDGE_SOCKET = "egress.sock";

    /** The port on the sandbox's own loopback where the agent bridges to {@link #BRIDGE_SOCKET}. */
    int BRIDGE_PORT = 3128;

    /**
     * Sets up what sandbox {@code id} needs on the host, in {@code runDir} (a host directory that
     * exists, is empty of the broker's files, and is mounted at {@link #RUN_DIR} inside): sockets
     * only {@code sandboxHostUid} may connect to, public files such as a trust bundle. The caller
     * owns the result and closes it when the sandbox is gone, or when its creation failed.
     *
     * @param sandboxHostUid the host uid of the sandbox's user, which alone may use the sockets
     * @throws AirlockException if the sandbox cannot be served; the message says why
     */
    Attachment attach(SandboxId id, SandboxSpec spec, Path runDir, int sandboxHostUid);

    /**
     * No broker: sandboxes get no network. A spec that asks for network is refused, so that it
     * never silently gets less than it asked for.
     */
    SandboxBroker NONE = (id, spec, runDir, sandboxHostUid) -> {
        if (!spec.network().isNone()) {
            throw AirlockException.unavailable("sandbox " + id + " asks for network, but this engine has no egress broker: create the"
                    + " engine with one (the server always has one), or drop the network policy");
        }
        return Attachment.NONE;
    };

    /** What a broker set up for one sandbox. */
    interface Attachment extends AutoCloseable {

        /** Whether the agent bridges {@link #BRIDGE_PORT} inside to {@link #BRIDGE_SOCKET} in the run directory. */
        boolean bridged();

        /**
         * Variables every execution's environment gets (the spec's and the request's own win), such
         * as where the trust bundle for intercepted HTTPS is. Never a secret.
         */
        Map<String, String> environment();

        /**
         * Replaces the sandbox's network policy; live connections the new policy denies are closed.
         *
         * @throws AirlockException if the sandbox was created without network
         */
        void updateNetworkPolicy(NetworkPolicy policy);

        /** Stops what the broker runs for the sandbox. Idempotent. */
        @Override
        void close();

        /** Nothing attached: no bridge, no variables, no network to change. */
        Attachment NONE = new Attachment() {
            @Override
            public boolean bridged() {
                return false;
            }

            @Override
            public Map<String, String> environment() {
                return Map.of();
            }

            @Override
            public void updateNetworkPolicy(NetworkPolicy policy) {
                throw new AirlockException(AirlockException.Kind.CONFLICT,
                        "the sandbox was created without network: create it with a network policy to change it later");
            }

            @Override
            public void close() {
            }
        };
    }
}
