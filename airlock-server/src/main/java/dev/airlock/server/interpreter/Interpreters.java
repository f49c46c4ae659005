package dev.airlock.server.interpreter;

import dev.airlock.server.audit.Audit;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.command.CellResult;
import dev.airlock.server.command.Command;
import dev.airlock.server.control.Admission;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.Tiers;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Carries out the interpreter commands once the controls let them through: contexts created,
 * listed, restarted and deleted, and cells run in them ({@link InterpreterContext}). A cell is an
 * execution of its sandbox: it keeps the sandbox from idling and is recorded like one (a digest of
 * its code, never the code), with the context's id.
 */
public final class Interpreters {

    private final Tiers tiers;
    private final AuditLog audit;

    public Interpreters(Tiers tiers, AuditLog audit) {
        this.tiers = tiers;
        this.audit = audit;
    }

    public Command.InterpreterContextView create(Admission a) {
        ManagedSandbox s = a.sandbox();
        InterpreterContexts contexts = contexts(s);
        String id = contexts.reserve(s.id());
        try {
            InterpreterContext c = start(s, id);
            contexts.add(c);
            record(s, "context-created", id);
            return c.view();
        } catch (RuntimeException e) {
            contexts.release();
            throw e;
        }
    }

    public List<Command.InterpreterContextView> list(ManagedSandbox s) {
        return contexts(s).list().stream().map(InterpreterContext::view).toList();
    }

    public Command.InterpreterContextView restart(Admission a, Command.RestartContext r) {
        ManagedSandbox s = a.sandbox();
        contexts(s).get(s.id(), r.context()).close();
        InterpreterContext c = start(s, r.context());
        contexts(s).replace(c);
        record(s, "context-restarted", r.context());
        return c.view();
    }

    public void delete(Admission a, Command.DeleteContext d) {
        ManagedSandbox s = a.sandbox();
        contexts(s).remove(s.id(), d.context()).close();
        record(s, "context-deleted", d.context());
    }

    public CellResult run(Admission a, Command.RunCell r) {
        ManagedSandbox s = a.sandbox();
        InterpreterContext c = r.context() != null ? contexts(s).get(s.id(), r.context()) : firstOrNew(a);
        Duration timeout = r.timeout() != null ? r.timeout() : s.sandbox().spec().limits().timeout();
        Map<String, Object> started = new LinkedHashMap<>();
        started.put("context", c.id());
        started.put("codeDigest", Audit.digest(r.code()));
        started.put("codeBytes", r.code().length());
        started.put("timeoutMs", timeout.toMillis());
        audit.record(AuditRecord.EXECUTION, s.id(), started);
        s.executionStarted();
        try {
            CellResult result = c.run(r.code(), timeout, r.listener());
            Map<String, Object> ended = new LinkedHashMap<>();
            ended.put("context", c.id());
            ended.put("status", result.status());
            ended.put("durationMs", result.duration().toMillis());
            ended.put("outputs", result.outputs().size());
            ended.put("truncated", result.truncated());
            audit.record(AuditRecord.RESULT, s.id(), ended);
            return result;
        } catch (RuntimeException e) {
            Map<String, Object> failed = new LinkedHashMap<>();
            failed.put("context", c.id());
            failed.put("endReason", "failed");
            failed.put("error", e instanceof dev.airlock.core.AirlockException ae ? ae.kind().name().toLowerCase(java.util.Locale.ROOT)
                    : e.getClass().getSimpleName());
            audit.record(AuditRecord.RESULT, s.id(), failed);
            throw e;
        } finally {
            s.executionEnded();
        }
    }

    /** The sandbox's first context; a new one if it has none (creations of it are one at a time, so a race makes one). */
    private InterpreterContext firstOrNew(Admission a) {
        InterpreterContexts contexts = contexts(a.sandbox());
        synchronized (contexts.creatingFirst()) {
            List<InterpreterContext> all = contexts.list();
            if (!all.isEmpty()) {
                return all.getFirst();
            }
            create(a);
            return contexts.list().getFirst();
        }
    }

    private InterpreterContext start(ManagedSandbox s, String id) {
        tiers.forTier(s.isolation()).driver().check(s.sandbox().spec(), List.of("python3"));
        s.executionStarted(); // starting a kernel is work: the sandbox is not idle meanwhile
        try {
            return InterpreterContext.start(id, s);
        } finally {
            s.executionEnded();
        }
    }

    private void record(ManagedSandbox s, String event, String context) {
        Map<String, Object> d = AuditRecord.lifecycle(event, null);
        d.put("context", context);
        audit.record(AuditRecord.LIFECYCLE, s.id(), d);
    }

    /** The sandbox's contexts: kernels whose state persists between cells, kept with the sandbox. */
    private static InterpreterContexts contexts(ManagedSandbox s) {
        return s.feature(InterpreterContexts.class, InterpreterContexts::new);
    }
}
