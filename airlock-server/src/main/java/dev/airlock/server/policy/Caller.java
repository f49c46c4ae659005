package dev.airlock.server.policy;

import java.time.Duration;
import java.util.Optional;

/**
 * Who is acting on this thread, through which door, for which granted operation. An interface
 * gets a caller only from {@code SandboxService.authorize}, after the policy allowed the
 * operation; every service method then checks that the caller's operation covers what it does.
 *
 * @param client    the authenticated client (null only for the server's own work)
 * @param via       the interface: {@code rest}, {@code mcp-stdio}, {@code mcp-http:<session>}
 * @param operation the operation the policy granted for this request
 * @param asker     how to ask this caller's user directly for an approval (MCP elicitation), or null
 */
public record Caller(Client client, String via, Operation operation, Asker asker) {

    /** The server itself: expiry, reaping, the end of an MCP session, shutdown. */
    public static final Caller SERVER = new Caller(null, "server", null, null);

    private static final ThreadLocal<Caller> CURRENT = new ThreadLocal<>();

    /** Asks the person behind a client to approve; empty when they did not answer. */
    @FunctionalInterface
    public interface Asker {
        Optional<Boolean> ask(String question, Duration timeout);
    }

    /** The name the audit log files this caller's records under: {@code <client>@<via>}, or {@code server}. */
    public String actor() {
        return client == null ? via : client.name() + "@" + via;
    }

    public boolean isServer() {
        return client == null;
    }

    /** The caller of this thread; null when none was set (the service then refuses to act). */
    public static Caller current() {
        return CURRENT.get();
    }

    /** Acts as {@code caller} on this thread until the scope is closed. */
    public static Scope as(Caller caller) {
        Caller previous = CURRENT.get();
        CURRENT.set(caller);
        return () -> {
            if (previous == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(previous);
            }
        };
    }

    /** A caller scope; closing it restores the previous caller. */
    @FunctionalInterface
    public interface Scope extends AutoCloseable {
        @Override
        void close();
    }
}
