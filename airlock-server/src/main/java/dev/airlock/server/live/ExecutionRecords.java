package dev.airlock.server.live;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Limits;
import dev.airlock.server.audit.Audit;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The audit records of executions: one when a program starts, one when it ends or fails, one for
 * each signal a client sends to it. Only digests and counts, never the command, code or output
 * (docs/audit.md lists every field). Filed under the caller of the current call.
 */
public final class ExecutionRecords {

    private final AuditLog audit;

    public ExecutionRecords(AuditLog audit) {
        this.audit = audit;
    }

    /** A program starts; {@code processId} is null for one a request waits for. */
    public void started(ManagedSandbox s, ExecRequest request, String processId) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("commandDigest", Audit.digest(request.argv()));
        d.put("argc", request.argv().size());
        d.put("cwdDigest", Audit.digest(request.cwd()));
        d.put("envCount", request.env() == null ? 0 : request.env().size());
        d.put("stdinBytes", request.stdin() == null ? 0 : request.stdin().length);
        d.put("timeoutMs", request.timeout() == null ? null : request.timeout().toMillis());
        d.put("background", processId != null);
        d.put("process", processId);
        d.put("limits", limits(s.sandbox().spec().limits()));
        audit.record(AuditRecord.EXECUTION, s.id(), d);
    }

    /** How it ended; {@code outBytes}, {@code errBytes}: what a background process spilled, or -1 for what the result holds. */
    public void ended(ManagedSandbox s, ExecResult r, String processId, long outBytes, long errBytes) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("process", processId);
        d.put("exitCode", r.exitCode());
        d.put("endReason", r.endReason() == null ? null : r.endReason().name().toLowerCase(Locale.ROOT));
        d.put("durationMs", r.duration() == null ? null : r.duration().toMillis());
        d.put("stdoutBytes", outBytes >= 0 ? outBytes : r.stdout() == null ? 0 : r.stdout().length);
        d.put("stderrBytes", errBytes >= 0 ? errBytes : r.stderr() == null ? 0 : r.stderr().length);
        d.put("truncated", r.truncated());
        d.put("killReason", r.endReason() == EndReason.EXITED ? null : r.message());
        audit.record(AuditRecord.RESULT, s.id(), d);
    }

    /** It could not be started, or failed inside Airlock: only the kind of error. */
    public void failed(ManagedSandbox s, String processId, Exception e) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("process", processId);
        d.put("endReason", "failed");
        d.put("error", e instanceof AirlockException ae ? ae.kind().name().toLowerCase(Locale.ROOT) : e.getClass().getSimpleName());
        audit.record(AuditRecord.RESULT, s.id(), d);
    }

    public static Map<String, Object> limits(Limits l) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("memoryBytes", l.memoryBytes());
        d.put("pids", l.pids());
        d.put("cpus", l.cpus());
        d.put("timeoutMs", l.timeout() == null ? null : l.timeout().toMillis());
        d.put("outputBytes", l.outputBytes());
        d.put("fileSizeBytes", l.fileSizeBytes());
        d.put("openFiles", l.openFiles());
        d.put("diskBytes", l.diskBytes());
        return d;
    }

    /**
     * A WebSocket attached to the terminal of a background process ({@code event} "attached"), or
     * detached from it ("detached", with the bytes it carried each way and why it closed).
     */
    public void terminal(ManagedSandbox s, String processId, String event, Map<String, Object> more) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("process", processId);
        d.put("event", event);
        d.putAll(more);
        audit.record(AuditRecord.TERMINAL, s.id(), d);
    }

    /** A client sent {@code signal} (9 for a kill) to a background process. */
    public void signalled(ManagedSandbox s, String processId, int signal) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("process", processId);
        d.put("signal", signal);
        audit.record(AuditRecord.SIGNAL, s.id(), d);
    }
}
