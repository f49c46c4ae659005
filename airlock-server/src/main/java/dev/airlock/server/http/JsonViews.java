package dev.airlock.server.http;

import dev.airlock.core.ExecResult;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.command.CellResult;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.MetricsSeries;
import dev.airlock.server.command.ProcessView;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.control.Refusal;
import dev.airlock.server.output.SpilledOutput;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.wire.Json;
import dev.airlock.server.wire.NetworkJson;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

import static dev.airlock.server.wire.Json.MAPPER;
import static dev.airlock.server.wire.Json.object;
import static dev.airlock.server.wire.Json.result;

/**
 * The shapes of the server's answers that carry more than one layer's types: sandboxes, processes,
 * snapshots, interpreter contexts and cells, approvals, audit records, and error bodies with the
 * refusal that made them. docs/rest-api.md is the contract; {@link Json} has the field readers.
 */
public final class JsonViews {

    private JsonViews() {
    }

    /** An audit record as {@code GET /v1/audit} lists it: its detail as JSON, its chain hashes as stored. */
    public static ObjectNode auditRecord(AuditRecord r) {
        ObjectNode n = object();
        n.put("seq", r.seq());
        n.put("time", r.time());
        n.put("kind", r.kind());
        n.put("actor", r.actor());
        n.put("sandbox", r.sandbox());
        JsonNode detail;
        try {
            detail = MAPPER.readTree(r.detail());
        } catch (RuntimeException e) {
            detail = MAPPER.getNodeFactory().stringNode(r.detail());
        }
        n.set("detail", detail);
        n.put("prevHash", r.prevHash());
        n.put("hash", r.hash());
        return n;
    }

    public static ObjectNode approval(Approval a) {
        ObjectNode n = object();
        n.put("id", a.id());
        n.put("state", a.state().name().toLowerCase(Locale.ROOT));
        n.put("client", a.client());
        n.put("action", a.trigger().id());
        n.put("rule", a.rule());
        n.put("sandbox", a.sandbox());
        n.put("summary", a.summary());
        n.put("requestedAt", a.requestedAt().toString());
        n.put("deadline", a.deadline().toString());
        n.put("decidedBy", a.decidedBy());
        n.put("decidedAt", a.decidedAt() == null ? null : a.decidedAt().toString());
        n.put("reason", a.reason());
        return n;
    }

    /**
     * A sandbox as {@code viewer} sees it: its owner (and the server) whole; a client that reaches
     * it through {@code sandbox.any} sees the names of its environment variables but not their
     * values, which are its owner's (an agent's keys are often passed there).
     */
    public static ObjectNode sandbox(SandboxView s, Caller viewer) {
        ObjectNode n = sandbox(s);
        if (viewer != null && !viewer.isServer() && !viewer.client().name().equals(s.owner())) {
            ObjectNode env = object();
            s.spec().env().keySet().forEach(k -> env.put(k, WITHHELD));
            n.set("env", env);
        }
        return n;
    }

    /** What an environment variable's value reads as to a viewer who is not the sandbox's owner. */
    static final String WITHHELD = "(withheld: not the owner)";

    /** The console's chart data: one array per series, all as long as {@code time}. */
    public static ObjectNode metricsHistory(MetricsSeries h) {
        ObjectNode n = object();
        n.put("intervalSeconds", h.intervalSeconds());
        n.set("time", MAPPER.valueToTree(h.time()));
        n.set("sandboxes", MAPPER.valueToTree(h.sandboxes()));
        n.set("executionsPerMinute", MAPPER.valueToTree(h.executionsPerMinute()));
        n.set("refusals", MAPPER.valueToTree(h.refusals()));
        n.set("egressBytes", MAPPER.valueToTree(h.egressBytes()));
        return n;
    }

    public static ObjectNode sandbox(SandboxView s) {
        ObjectNode n = object();
        n.put("id", s.id());
        n.put("owner", s.owner());
        n.put("profile", s.profile().name());
        n.put("state", s.state());
        if (s.pausedToDisk()) {
            n.put("pausedToDisk", true);
        }
        n.put("isolation", s.isolation().id());
        if (s.node() != null) {
            n.put("node", s.node());
        }
        n.put("image", s.spec().image());
        n.put("imageDigest", s.imageDigest());
        n.put("language", s.defaultLanguage() == null ? null : s.defaultLanguage().id());
        n.set("limits", Json.limits(s.spec().limits()));
        n.set("env", MAPPER.valueToTree(s.spec().env()));
        n.set("network", NetworkJson.write(s.network()));
        n.set("labels", MAPPER.valueToTree(s.labels()));
        n.put("createdAt", s.createdAt().toString());
        n.put("expiresAt", s.expiresAt().toString());
        n.put("idleTimeoutSeconds", s.idleTimeout().toSeconds());
        n.set("ports", MAPPER.valueToTree(s.profile().ports()));
        n.put("lastActivityAt", s.lastActivity().toString());
        var usage = s.usage();
        if (usage == null) {
            n.putNull("usage");
        } else {
            n.putObject("usage").put("cpuSeconds", usage.cpuNanos() / 1e9).put("memoryBytes", usage.memoryBytes());
        }
        return n;
    }

    /** A node of the cluster (GET /v1/cluster/nodes). */
    public static ObjectNode node(Command.NodeView n) {
        ObjectNode o = Json.object().put("name", n.name()).put("state", n.state()).put("draining", n.draining())
                .put("apiAddress", n.apiAddress()).put("capacity", n.capacity()).put("sandboxes", n.sandboxes())
                .put("startedAt", n.startedAt().toString()).put("heartbeatAt", n.heartbeatAt().toString())
                .put("silentSeconds", n.silentFor().toMillis() / 1000.0).put("self", n.self());
        o.set("tiers", MAPPER.valueToTree(n.tiers()));
        return o;
    }

    public static ObjectNode snapshot(Command.SnapshotView s) {
        ObjectNode n = object();
        n.put("id", s.id());
        n.put("owner", s.owner());
        n.put("sandbox", s.sandbox());
        n.put("profile", s.profile());
        n.put("image", s.image());
        n.put("imageDigest", s.imageDigest());
        n.put("digest", s.digest());
        n.put("bytes", s.bytes());
        n.put("files", s.files());
        n.set("leftOut", MAPPER.valueToTree(s.leftOut()));
        n.put("createdAt", s.createdAt().toString());
        n.put("expiresAt", s.expiresAt().toString());
        n.put("memory", s.memory());
        return n;
    }

    public static ObjectNode context(Command.InterpreterContextView c) {
        ObjectNode n = object();
        n.put("id", c.id());
        n.put("language", c.language());
        n.put("state", c.state());
        n.put("createdAt", c.createdAt().toString());
        n.put("cells", c.cells());
        n.put("message", c.message());
        return n;
    }

    /** A cell's result: its streams, outputs (MIME bundles), error and how it ended. */
    public static ObjectNode cell(CellResult r) {
        ObjectNode n = object();
        n.put("context", r.context());
        n.put("status", r.status());
        n.put("executionCount", r.executionCount());
        n.put("stdout", r.stdout());
        n.put("stderr", r.stderr());
        ArrayNode outputs = n.putArray("outputs");
        r.outputs().forEach(o -> outputs.add(output(o)));
        n.set("error", r.error() == null ? null : error(r.error()));
        n.put("truncated", r.truncated());
        n.put("durationMs", r.duration().toMillis());
        n.put("message", r.message());
        return n;
    }

    public static ObjectNode output(CellResult.Output o) {
        ObjectNode n = object();
        n.put("type", o.kind());
        ObjectNode data = n.putObject("data");
        o.data().forEach(data::set);
        return n;
    }

    public static ObjectNode error(CellResult.CellError e) {
        ObjectNode n = object();
        n.put("name", e.name());
        n.put("value", e.value());
        n.set("traceback", MAPPER.valueToTree(e.traceback()));
        return n;
    }

    /** A process with the head of its output ({@value ProcessView#OUTPUT_PREVIEW_BYTES} bytes a stream) once it ended. */
    public static ObjectNode process(ProcessView p) {
        return process(p, true);
    }

    /**
     * A process; {@code withOutput} false (a list) leaves out the output, so a list of every kept
     * process stays small whatever they wrote. All of it: {@code GET .../processes/{pid}/stdout}.
     */
    public static ObjectNode process(ProcessView p, boolean withOutput) {
        ObjectNode n = object();
        n.put("id", p.id());
        n.set("command", MAPPER.valueToTree(p.command()));
        n.put("state", p.running() ? "running" : "exited");
        n.put("tty", p.tty());
        n.put("pid", p.pid());
        n.put("startedAt", p.startedAt().toString());
        n.put("stdoutBytes", p.output().stdoutBytes());
        n.put("stderrBytes", p.output().stderrBytes());
        ExecResult r = p.result();
        if (r == null) {
            n.putNull("result");
            return n;
        }
        ObjectNode result = result(r);
        result.put("truncated", r.truncated() || p.output().dropped());
        if (withOutput) {
            result.put("stdout", new String(SpilledOutput.head(p.output().stdoutFile(), ProcessView.OUTPUT_PREVIEW_BYTES),
                    StandardCharsets.UTF_8));
            result.put("stderr", new String(SpilledOutput.head(p.output().stderrFile(), ProcessView.OUTPUT_PREVIEW_BYTES),
                    StandardCharsets.UTF_8));
        } else {
            result.remove("stdout");
            result.remove("stderr");
        }
        n.set("result", result);
        return n;
    }

    public static byte[] error(String code, String message) {
        return error(code, message, null);
    }

    /** An error body; a refusal's names the control and rule that made it: {@code {"error": {code, message, control, rule}}}. */
    public static byte[] error(String code, String message, Refusal refusal) {
        return errorNode(code, message, refusal).toString().getBytes(StandardCharsets.UTF_8);
    }

    /** {@link #error(String, String, Refusal)} as a tree, for an answer that adds fields beside it. */
    public static ObjectNode errorNode(String code, String message, Refusal refusal) {
        ObjectNode n = object();
        ObjectNode e = n.putObject("error");
        e.put("code", code);
        e.put("message", message);
        if (refusal != null) {
            e.put("control", refusal.control());
            e.put("rule", refusal.rule());
        }
        return n;
    }
}
