package dev.airlock.server.sandbox;

import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.control.ControlChain;
import dev.airlock.server.control.OperationGrant;
import dev.airlock.server.control.Refusal;
import dev.airlock.server.live.Sandboxes;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The door's question, asked before any command: may this client use this operation at all (the
 * grant control)? Each request is recorded with its decision, also one that never reached an
 * operation; requests without a valid token, and those a door marks as repeating, are folded per
 * source and window (docs/audit.md).
 */
final class DoorRequests {

    /** The control that refuses a console cookie request another site's page could have made. */
    static final String CROSS_SITE = "cross-site";

    private final AuditLog audit;
    private final Sandboxes sandboxes;
    private final OperationGrant grant;
    private final ServerMetrics metrics;

    DoorRequests(AuditLog audit, Sandboxes sandboxes, OperationGrant grant, ServerMetrics metrics) {
        this.audit = audit;
        this.sandboxes = sandboxes;
        this.grant = grant;
        this.metrics = metrics;
    }

    /**
     * Decides whether {@code r.client()} may use {@code r.operation()} (the {@link OperationGrant}
     * control), records the request and the decision, and returns the caller to {@link SandboxService#execute}
     * the request's commands as. Throws the grant's refusal when the policy does not grant it.
     */
    Caller authorize(CommandApi.Request r) {
        Caller caller = new Caller(r.client(), r.via(), r.operation(), r.asker());
        String sandbox = filedUnder(caller, r);
        Refusal refusal = grant.decide(r.client(), r.operation());
        Map<String, Object> a = refusal == null ? new LinkedHashMap<>() : ControlChain.denial(r.operation().id(), refusal);
        a.put("interface", r.iface());
        if (refusal == null) {
            a.put("operation", r.operation().id());
            a.put("decision", "allow");
            a.put("control", OperationGrant.NAME);
            a.put("rule", OperationGrant.granting(r.client(), r.operation()));
        }
        if (r.repeats() == null || audit.admitRepeat(r.repeats().source() + " " + a.get("decision"), r.repeats().window(),
                AuditRecord.AUTHORIZATION, caller.actor(), sandbox, a, r.endpoint())) {
            recordRequest(r, caller, sandbox);
            audit.record(AuditRecord.AUTHORIZATION, caller.actor(), sandbox, a);
        }
        if (refusal != null) {
            metrics.refused();
            throw refusal.exception();
        }
        return caller;
    }

    /**
     * Records a request of an authenticated client that never reached an operation (no such
     * endpoint, a method not allowed, a body that could not be read): so every request is on the
     * log, not only those that were decided.
     */
    void recordUndecided(CommandApi.Request r) {
        Caller caller = new Caller(r.client(), r.via(), null, null);
        recordRequest(r, caller, filedUnder(caller, r));
    }

    /** The sandbox a request's records are filed under: the one it names, unless the client cannot see it. */
    private String filedUnder(Caller caller, CommandApi.Request r) {
        return sandboxes.visibleTo(caller, r.sandbox()) ? r.sandbox() : null;
    }

    private void recordRequest(CommandApi.Request r, Caller caller, String sandbox) {
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("interface", r.iface());
        q.put("endpoint", r.endpoint());
        q.put("operation", r.operation() == null ? null : r.operation().id());
        q.put("argsDigest", r.argsDigest());
        audit.record(AuditRecord.REQUEST, caller.actor(), sandbox, q);
    }

    /**
     * Records a request no client could be found for (a missing or wrong token). Anyone who can
     * reach the port can repeat it at will, so it is folded per source (interface, address and
     * whether a token was sent) and window: the first of a window is recorded as a request and a
     * deny, the rest counted into one deny record when the window closes (docs/audit.md).
     */
    void refuseUnauthenticated(String via, String iface, String endpoint, String sourceAddress, boolean tokenSent) {
        String reason = tokenSent ? "wrong" : "missing";
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("interface", iface);
        q.put("endpoint", endpoint);
        q.put("source", sourceAddress);
        String source = iface + " " + sourceAddress + " " + reason;
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("interface", iface);
        a.put("decision", "deny");
        a.put("control", "authenticate");
        a.put("rule", "token");
        a.put("token", reason);
        a.put("source", sourceAddress);
        if (audit.admitRepeat(source, AuditRecord.AUTHORIZATION, via, null, a, endpoint)) {
            audit.record(AuditRecord.REQUEST, via, null, q);
            audit.record(AuditRecord.AUTHORIZATION, via, null, a);
        }
    }

    /**
     * Records a cookie request refused as cross-site (see {@link CommandApi#refuseCrossSite}): a
     * request and a deny by control {@value #CROSS_SITE}, with the page's origin, folded per client
     * and rule; each sample is the endpoint and the origin.
     */
    void refuseCrossSite(Client client, String via, String endpoint, String origin, String rule) {
        Caller caller = new Caller(client, via, null, null);
        String from = origin == null ? "no Origin" : origin;
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("interface", via);
        q.put("endpoint", endpoint);
        q.put("origin", from);
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("interface", via);
        a.put("decision", "deny");
        a.put("control", CROSS_SITE);
        a.put("rule", rule);
        a.put("origin", from);
        if (audit.admitRepeat(via + " " + client.name() + " " + rule, AuditRecord.AUTHORIZATION, caller.actor(), null, a, endpoint + " from " + from)) {
            audit.record(AuditRecord.REQUEST, caller.actor(), null, q);
            audit.record(AuditRecord.AUTHORIZATION, caller.actor(), null, a);
        }
    }
}
