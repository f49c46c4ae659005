package dev.airlock.server.control;

import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The controls every command passes, in order; the first refusal stops the command and is
 * recorded as a deny that names the control and its rule (docs/audit.md).
 */
public final class ControlChain {

    private final List<Control> controls;
    private final AuditLog audit;

    public ControlChain(List<Control> controls, AuditLog audit) {
        this.controls = List.copyOf(controls);
        this.audit = audit;
    }

    /** The controls, in the order they check. */
    public List<Control> controls() {
        return controls;
    }

    /** Runs every control on {@code a}; throws the first refusal, recorded. */
    public void check(Admission a) {
        for (Control control : controls) {
            try {
                control.check(a);
            } catch (Refused r) {
                audit.record(AuditRecord.AUTHORIZATION, a.sandboxId(), denial(a.command().operation().id(), r.refusal()));
                throw r;
            }
        }
    }

    /** The deny record of {@code refusal}. */
    public static Map<String, Object> denial(String operation, Refusal refusal) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("operation", operation);
        d.put("decision", "deny");
        d.put("control", refusal.control());
        d.put("rule", refusal.rule());
        d.put("refusal", refusal.kind().name().toLowerCase(Locale.ROOT));
        return d;
    }
}
