package dev.airlock.server.policy;

import java.time.Duration;
import java.util.Optional;

/**
 * Who is acting in this call, through which door, for which granted operation. An interface
 * gets a caller only from {@code SandboxService.authorize}, after the policy allowed the
 * operation, and runs the request inside {@link #call}; every service method then checks that
 * the caller's operation covers what it does.
 *
 * @param client    the authenticated client (null only for the server's own work)
 * @param via       the interface: {@code rest}, {@code mcp-stdio}, {@code mcp-http:<session>}
 * @param operation the operation the policy granted for this request
 * @param asker     how to ask this caller's user directly for an approval (MCP elicitation), or null
 */
public record Caller(Client client, String via, Operation operation, Asker asker) {

    /** The server itself: expiry, reaping, the end of an MCP session, shutdown. */
    public static final Caller SERVER = new Caller(null, "server", null, null);

    /**
     * Bound for the extent of one authorized call ({@link #call}, {@link #run}); a thread started
     * inside that extent does not inherit it, so work handed to another thread binds its caller
     * again, explicitly. Nothing ever sets or clears it by hand.
     */
    private static final ScopedValue<Caller> CURRENT = ScopedValue.newInstance();

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

    /** The caller of this call; null when none is bound (the service then refuses to act). */
    public static Caller current() {
        return CURRENT.isBound() ? CURRENT.get() : null;
    }

    /** Runs {@code op} as {@code caller}; the binding ends when {@code op} returns or throws. */
    public static <R, X extends Throwable> R call(Caller caller, ScopedValue.CallableOp<R, X> op) throws X {
        return ScopedValue.where(CURRENT, caller).call(op);
    }

    /** Runs {@code op} as {@code caller}; the binding ends when {@code op} returns or throws. */
    public static <X extends Throwable> void run(Caller caller, Action<X> op) throws X {
        ScopedValue.where(CURRENT, caller).call(() -> {
            op.run();
            return null;
        });
    }

    /** Work done as a caller that returns nothing. */
    @FunctionalInterface
    public interface Action<X extends Throwable> {
        void run() throws X;
    }
}
