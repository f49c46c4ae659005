package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.command.Command;
import dev.airlock.server.policy.Approval;

/**
 * An approval is decided by someone other than who asked for it: a client holding
 * {@code approvals} cannot approve its own requests.
 */
public final class SeparationOfDuties implements Control {

    private final Approvals approvals;

    public SeparationOfDuties(Approvals approvals) {
        this.approvals = approvals;
    }

    @Override
    public String name() {
        return "duties";
    }

    @Override
    public void check(Admission a) {
        if (!(a.command() instanceof Command.Decide d) || a.caller().isServer()) {
            return;
        }
        Approval asked = approvals.get(d.approval());
        if (a.caller().client().name().equals(asked.client())) {
            throw refuse(Kind.PERMISSION_DENIED, "approvals", "approval " + asked.id() + " was asked for by client '" + asked.client()
                    + "' itself: another client must decide it (separation of duties); give an operator its own token with 'approvals'");
        }
    }
}
