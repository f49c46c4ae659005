package dev.airlock.server.control;

import dev.airlock.core.AirlockException;

/** The exception that carries a {@link Refusal} from the control that refused to the door. */
public final class Refused extends AirlockException {

    private final Refusal refusal;

    Refused(Refusal refusal) {
        super(refusal.kind(), refusal.message());
        this.refusal = refusal;
    }

    public Refusal refusal() {
        return refusal;
    }
}
