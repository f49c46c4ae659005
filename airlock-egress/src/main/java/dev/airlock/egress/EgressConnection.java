package dev.airlock.egress;

import java.net.Socket;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * One connection's life as the proxy's other threads see it: which phase it is in (so the
 * watchdog knows which timeout applies), the upstream socket and approval waiter a cut must reach,
 * and why it was cut. The stages keep their decisions in its {@link ConnectionRecord}.
 */
final class EgressConnection {

    enum Phase {
        /** Reading what the client asks for, until a relay or an exchange starts: the handshake timeout. */
        HANDSHAKE,
        /** A request waits for a person: only the approval timeout. */
        AWAITING_APPROVAL,
        /** Bytes flow: the idle timeout, counted from the last byte. */
        RELAYING
    }

    final ClientChannel client;
    final ConnectionRecord record = new ConnectionRecord();
    private final Supplier<EgressRules> rules;
    private final SandboxBudget budget;
    private volatile Phase phase = Phase.HANDSHAKE;
    private volatile long lastActivity = System.nanoTime();
    private volatile long approvalStarted;
    private volatile String cutBy;
    private volatile Socket upstream;
    /** The thread blocked in the request gate, to interrupt when the connection is cut. */
    private volatile Thread waiter;

    EgressConnection(ClientChannel client, Supplier<EgressRules> rules, SandboxBudget budget) {
        this.client = client;
        this.rules = rules;
        this.budget = budget;
    }

    /** Null while the connection is not cut; else the first reason it was. */
    String cutBy() {
        return cutBy;
    }

    /** The socket a cut closes; set before it connects, so a cut during the connect reaches it too. */
    void upstream(Socket socket) {
        upstream = socket;
    }

    Socket upstream() {
        return upstream;
    }

    /** Closes both ends and interrupts a waiting gate; the first reason is the one recorded. */
    void cut(String why) {
        if (cutBy == null) {
            cutBy = why;
        }
        closeQuietly(upstream);
        closeQuietly(client);
        Thread w = waiter;
        if (w != null) {
            w.interrupt();
        }
    }

    /** Closes both ends; no reason to record. */
    void close() {
        closeQuietly(upstream);
        closeQuietly(client);
    }

    /** Records why an admitted connection ended without being forwarded; the answer goes to the client first. */
    void refusedInside(String why) {
        if (cutBy == null) {
            cutBy = why;
        }
    }

    /** Under {@code next} rules: cuts the connection if they deny the address it is connected (or about) to. */
    void recheck(EgressRules next) {
        if (phase != Phase.HANDSHAKE && record.address() != null) {
            EgressDecision d = next.recheck(record.destination(), record.port(), record.address());
            if (!d.allowed()) {
                cut("policy update: " + d.rule());
            }
        }
    }

    /** The phase's timeout, if it ran out by {@code now}: the reason to cut; else null. */
    String overdue(long now, EgressProxy.Options options) {
        return switch (phase) {
            case AWAITING_APPROVAL -> now - approvalStarted > options.approvalTimeout().toNanos() ? "approval timeout" : null;
            case RELAYING -> now - lastActivity > options.idleTimeout().toNanos() ? "idle timeout" : null;
            case HANDSHAKE -> now - record.started() > options.handshakeTimeout().toNanos() ? "handshake timeout" : null;
        };
    }

    /** From here the idle timeout applies; rechecks the newest rules, since they may have changed during the handshake. */
    void startRelaying() {
        lastActivity = System.nanoTime();
        phase = Phase.RELAYING;
        recheck(rules.get());
    }

    void awaitApproval() {
        approvalStarted = System.nanoTime();
        waiter = Thread.currentThread();
        phase = Phase.AWAITING_APPROVAL;
    }

    /** The gate answered (or was interrupted): the idle timeout applies, counted from the answer. */
    void approvalAnswered() {
        waiter = null;
        lastActivity = System.nanoTime();
        phase = Phase.RELAYING;
    }

    void active() {
        lastActivity = System.nanoTime();
    }

    /** Counts relayed bytes one way, and cuts the connection once the sandbox's byte budget is spent. */
    void count(AtomicLong direction, int n) {
        direction.addAndGet(n);
        lastActivity = System.nanoTime();
        if (!budget.spend(n, rules.get().policy())) {
            cut("limit bytes");
        }
    }

    static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            // nothing to do
        }
    }
}
