package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;

/**
 * One check every command passes before its handler runs. A control has one job; it returns to
 * let the command go on, or throws the {@link Refusal} it made with {@link #refuse}. Controls may
 * hold something for the command (a sandbox slot) on its {@link Admission}; the chain is
 * assembled once, in order, in {@code SandboxService}, and {@link ControlChain} records each
 * refusal on the audit log.
 */
public interface Control {

    /** The name refusals carry: {@code grant}, {@code profile}, {@code quota}, ... */
    String name();

    /** Lets {@code admission} go on, or throws a refusal. */
    void check(Admission admission);

    /** A refusal by this control under {@code rule}, to throw. */
    default Refused refuse(Kind kind, String rule, String message) {
        return new Refusal(name(), rule, kind, message).exception();
    }
}
