package dev.airlock.server.sandbox;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.server.control.Approvals;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.Sandboxes;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Policy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The egress proxy's question to a person: may this sandbox send this request (a profile's
 * {@code approveRequests} rule)? It is asked on behalf of the sandbox's owner, and a sandbox may
 * have at most {@value #MAX_PENDING} such questions open at once.
 */
final class EgressApprovals {

    private static final Logger LOG = LoggerFactory.getLogger(EgressApprovals.class);
    /** Egress requests of one sandbox that may wait for approval at once. */
    static final int MAX_PENDING = 4;

    private final Sandboxes sandboxes;
    private final Approvals approvals;
    private final Policy policy;

    EgressApprovals(Sandboxes sandboxes, Approvals approvals, Policy policy) {
        this.sandboxes = sandboxes;
        this.approvals = approvals;
        this.policy = policy;
    }

    /** True when a person approved; false when denied, unanswered in time, or the sandbox is gone. */
    boolean approve(String sandboxId, String method, String host, int port, String target) {
        ManagedSandbox s = sandboxes.find(sandboxId);
        if (s == null) {
            return false;
        }
        long waiting = approvals.pending().stream().filter(a -> sandboxId.equals(a.sandbox()) && a.trigger() == Approval.Trigger.REQUEST).count();
        if (waiting >= MAX_PENDING) {
            // a sandbox must not bury a person in prompts: its further requests are refused until these are decided
            LOG.warn("sandbox {}: {} egress requests already wait for approval; refused {} {}:{}", sandboxId, waiting, Printable.of(method),
                    Printable.of(host), port);
            return false;
        }
        Caller caller = new Caller(policy.clients().get(s.owner()), "egress-proxy", null, null);
        try {
            approvals.await(caller, Approval.Trigger.REQUEST, s.profile().rule("approveRequests"), sandboxId, "let sandbox " + sandboxId
                    + " (client '" + s.owner() + "') send " + Printable.of(method) + " " + Printable.of(host) + ":" + port
                    + Printable.of(target, 600));
            return true;
        } catch (AirlockException e) {
            return false;
        }
    }
}
