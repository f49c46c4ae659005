package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy;

import java.net.InetAddress;
import java.util.function.Supplier;

/**
 * The first control on a request: the newest policy's decision on the destination as the sandbox
 * spelled it, then the sandbox's byte and connection budgets. Connects nothing; an admitted
 * request holds a connection slot until its connection ends.
 */
final class Admission {

    /**
     * A request the policy let through.
     *
     * @param address    the address the rules chose: the only one ever connected to
     * @param admittedBy the rules that decided, so a later stage can tell whether they changed since
     */
    record Admitted(InetAddress address, String rule, EgressRules admittedBy) {
    }

    private final Supplier<EgressRules> rules;
    private final SandboxBudget budget;

    Admission(Supplier<EgressRules> rules, SandboxBudget budget) {
        this.rules = rules;
        this.budget = budget;
    }

    Admitted admit(EgressRequest asked) throws EgressRefusal {
        EgressRules current = rules.get();
        NetworkPolicy policy = current.policy();
        EgressDecision d = current.decide(asked.requestedHost(), asked.port());
        if (!(d instanceof EgressDecision.Allowed allowed)) {
            throw new EgressRefusal(403, Socks5Handshake.NOT_ALLOWED, d.rule(), ((EgressDecision.Denied) d).reason(), null);
        }
        if (budget.bytesExhausted(policy)) {
            throw new EgressRefusal(403, Socks5Handshake.NOT_ALLOWED, "limit bytes",
                    "the sandbox has used its " + policy.maxBytes() + " bytes of network transfer", allowed.address());
        }
        if (!budget.takeSlot(policy)) {
            throw new EgressRefusal(429, Socks5Handshake.NOT_ALLOWED, "limit connections",
                    "the sandbox already has " + policy.maxConnections() + " connections open", allowed.address());
        }
        return new Admitted(allowed.address(), allowed.rule(), current);
    }

    void release() {
        budget.releaseSlot();
    }
}
