package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;

/**
 * The policy's {@code allow} list: a client may send a command only if it was granted the
 * command's operation. A door asks {@link #decide} when a request arrives (before its body is
 * judged, so a client learns nothing about operations it may not use); in the chain, the control
 * checks that the operation the caller was granted covers the command (a one-shot run covers its
 * own create, files, exec and destroy; nothing else covers another operation).
 */
public final class OperationGrant implements Control {

    public static final String NAME = "grant";
    private final String policySource;

    public OperationGrant(String policySource) {
        this.policySource = policySource;
    }

    @Override
    public String name() {
        return NAME;
    }

    /** Null when {@code client} may call {@code operation}; else the refusal. */
    public Refusal decide(Client client, Operation operation) {
        if (client.may(operation)) {
            return null;
        }
        String rule = client.rule("allow");
        return new Refusal(NAME, rule, Kind.PERMISSION_DENIED, "client '" + client.name() + "' may not call " + operation.id()
                + " (rule " + rule + " in " + policySource + "): ask the operator to grant it");
    }

    /** The rule that granted {@code operation} to {@code client}, for the allow record. */
    public static String granting(Client client, Operation operation) {
        return client.rule("allow") + " grants " + operation.id();
    }

    @Override
    public void check(Admission a) {
        Caller c = a.caller();
        if (c.isServer()) {
            return;
        }
        if (c.operation() == null || !a.command().coveredBy(c.operation())) {
            throw refuse(Kind.PERMISSION_DENIED, c.client().rule("allow"), "operation " + (c.operation() == null ? "(none)" : c.operation().id())
                    + " does not cover " + a.command().operation().id() + ": authorize the request for the operation it performs");
        }
    }
}
