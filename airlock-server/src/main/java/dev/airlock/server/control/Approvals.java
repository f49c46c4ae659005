package dev.airlock.server.control;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Caller;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The approval gate: an action a policy marks waits here until a person approves or denies it
 * (REST, CLI, or the caller's own MCP client through elicitation). No answer before the deadline
 * means deny. Every request and decision goes to the audit log.
 */
public final class Approvals {

    private static final Logger LOG = LoggerFactory.getLogger(Approvals.class);
    /** Decided approvals kept for lookup, newest first. */
    private static final int KEPT = 200;

    private final AuditLog audit;
    private final Duration timeout;
    private final Map<String, Waiting> pending = new ConcurrentHashMap<>();
    private final List<Approval> decided = new ArrayList<>();
    private final SecureRandom random = new SecureRandom();
    private final List<Runnable> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

    private record Waiting(Approval approval, CompletableFuture<Approval> decision) {
    }

    /** The name of this node of a cluster, in every approval's id; null on a server alone. */
    private final String node;

    public Approvals(AuditLog audit, Duration timeout) {
        this(audit, timeout, null);
    }

    /**
     * {@code node}: this server's name as a node of a cluster, or null. A node's approvals are named
     * {@code ap-<node>-<16 hex>}, so that any node finds where one waits (docs/cluster.md).
     */
    public Approvals(AuditLog audit, Duration timeout, String node) {
        this.audit = audit;
        this.timeout = timeout;
        this.node = node;
    }

    /** Runs {@code listener} after every request and decision (the console's event stream); it must return at once. */
    public void onChange(Runnable listener) {
        listeners.add(listener);
    }

    public Duration timeout() {
        return timeout;
    }

    /**
     * Waits for a decision on {@code summary}; returns when it is approved, and throws
     * PERMISSION_DENIED, naming the rule, when it is denied or not answered in time.
     */
    public void await(Caller caller, Approval.Trigger trigger, String rule, String sandbox, String summary) {
        byte[] id = new byte[8];
        random.nextBytes(id);
        Instant now = Instant.now();
        Approval a = new Approval("ap-" + (node == null ? "" : node + "-") + HexFormat.of().formatHex(id), caller.client() == null ? null : caller.client().name(),
                trigger, rule, sandbox, summary, now, now.plus(timeout), Approval.State.PENDING, null, null, null);
        Waiting w = new Waiting(a, new CompletableFuture<>());
        pending.put(a.id(), w);
        record(caller.actor(), a, "requested");
        LOG.info("approval {} pending for client {}: {} ({})", a.id(), a.client(), summary, rule);
        if (caller.asker() != null) {
            String question = "Airlock asks you to approve: " + summary + " (rule " + rule + ", client " + a.client() + ")";
            Thread.ofVirtual().name("airlock-elicitation-" + a.id()).start(() -> {
                try {
                    Optional<Boolean> answer = caller.asker().ask(question, timeout);
                    answer.ifPresent(yes -> decideQuietly(a.id(), yes, "mcp-elicitation:" + a.client(),
                            yes ? "approved by the MCP client's user" : "declined by the MCP client's user"));
                } catch (RuntimeException e) {
                    LOG.debug("elicitation for approval {} failed: {}", a.id(), e.toString());
                }
            });
        }
        Approval outcome;
        try {
            outcome = w.decision().get(Math.max(1, Duration.between(Instant.now(), a.deadline()).toMillis()), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            outcome = finish(a.id(), Approval.State.TIMED_OUT, "timeout", "no answer within " + timeout.toSeconds() + " s");
            if (outcome == null || outcome.state() == Approval.State.PENDING) {
                outcome = w.decision().join();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            finish(a.id(), Approval.State.DENIED, "cancelled", "the request was cancelled while it waited");
            throw new AirlockException(Kind.PERMISSION_DENIED, "approval " + a.id() + " was abandoned: the request was cancelled");
        } catch (ExecutionException e) {
            throw new AirlockException(Kind.INTERNAL, "approval " + a.id() + " failed: " + e.getCause());
        }
        switch (outcome.state()) {
            case APPROVED -> {
            }
            case TIMED_OUT -> throw new AirlockException(Kind.PERMISSION_DENIED, summary + ": needs approval (rule " + rule
                    + ") and nobody approved it within " + timeout.toSeconds() + " s (approval " + a.id()
                    + "); ask an operator to approve with 'airlock approvals approve <id>' while the request waits");
            default -> throw new AirlockException(Kind.PERMISSION_DENIED, summary + ": denied by " + outcome.decidedBy()
                    + " (approval " + a.id() + ", rule " + rule + ")" + (outcome.reason() == null ? "" : ": " + outcome.reason()));
        }
    }

    /** The approvals waiting for a decision, oldest first. */
    public List<Approval> pending() {
        return pending.values().stream().map(Waiting::approval).sorted(Comparator.comparing(Approval::requestedAt)).toList();
    }

    /** A pending or recently decided approval. */
    public Approval get(String id) {
        Waiting w = pending.get(id);
        if (w != null) {
            return w.approval();
        }
        synchronized (decided) {
            for (Approval a : decided) {
                if (a.id().equals(id)) {
                    return a;
                }
            }
        }
        throw new AirlockException(Kind.NOT_FOUND, "approval " + id + " does not exist or was decided too long ago: list pending ones with"
                + " GET /v1/approvals or 'airlock approvals list'");
    }

    /** Approves or denies a pending approval; CONFLICT when it was already decided. */
    public Approval decide(String id, boolean approve, String by, String reason) {
        Approval done = finish(id, approve ? Approval.State.APPROVED : Approval.State.DENIED, by, reason);
        if (done == null) {
            Approval earlier = get(id);
            throw new AirlockException(Kind.CONFLICT, "approval " + id + " was already decided: " + earlier.state().name().toLowerCase()
                    + " by " + earlier.decidedBy());
        }
        return done;
    }

    private void decideQuietly(String id, boolean approve, String by, String reason) {
        finish(id, approve ? Approval.State.APPROVED : Approval.State.DENIED, by, reason);
    }

    /** Ends a pending approval; null when it was no longer pending. */
    private Approval finish(String id, Approval.State state, String by, String reason) {
        Waiting w = pending.remove(id);
        if (w == null) {
            return null;
        }
        Approval done = w.approval().decided(state, by, reason);
        synchronized (decided) {
            decided.addFirst(done);
            if (decided.size() > KEPT) {
                decided.removeLast();
            }
        }
        record(by, done, state.name().toLowerCase());
        LOG.info("approval {} {} by {}", id, state.name().toLowerCase(), by);
        w.decision().complete(done);
        return done;
    }

    private void record(String actor, Approval a, String event) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("approval", a.id());
        d.put("event", event);
        d.put("client", a.client());
        d.put("trigger", a.trigger().id());
        d.put("rule", a.rule());
        // a command or a request URL may carry what only digests may keep (see the execution records)
        boolean verbatim = a.trigger() == Approval.Trigger.CREATE || a.trigger() == Approval.Trigger.NETWORK;
        d.put(verbatim ? "summary" : "summaryDigest", verbatim ? a.summary() : dev.airlock.server.audit.Audit.digest(a.summary()));
        d.put("decidedBy", a.decidedBy());
        d.put("reason", a.reason());
        audit.record(AuditRecord.APPROVAL, actor, a.sandbox(), d);
        listeners.forEach(Runnable::run);
    }
}
