package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.ExecResult;
import dev.airlock.core.ImageInfo;
import dev.airlock.core.Limits;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxSpec;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The REST API's JSON: strict parsing of request bodies (unknown fields are errors that name the
 * field) and the shapes of responses. docs/rest-api.md is the contract.
 */
final class Json {

    static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private Json() {
    }

    static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    /** Parses a request body that must be a JSON object with only {@code allowed} fields. */
    static JsonNode parseObject(byte[] body, Set<String> allowed) {
        JsonNode node;
        try {
            node = body.length == 0 ? MAPPER.createObjectNode() : MAPPER.readTree(body);
        } catch (JacksonException e) {
            throw AirlockException.invalid("request body is not valid JSON: " + printable(e.getOriginalMessage()));
        }
        if (node == null || !node.isObject()) {
            throw AirlockException.invalid("request body must be a JSON object");
        }
        for (Iterator<String> it = node.propertyNames().iterator(); it.hasNext(); ) {
            String field = it.next();
            if (!allowed.contains(field)) {
                throw AirlockException.invalid("unknown field '" + printable(field) + "': allowed fields are " + String.join(", ", allowed));
            }
        }
        return node;
    }

    static String string(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isString()) {
            throw AirlockException.invalid("field '" + field + "' must be a string");
        }
        return v.asString();
    }

    static Double number(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isNumber()) {
            throw AirlockException.invalid("field '" + field + "' must be a number");
        }
        return v.asDouble();
    }

    static boolean bool(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return false;
        }
        if (!v.isBoolean()) {
            throw AirlockException.invalid("field '" + field + "' must be true or false");
        }
        return v.asBoolean();
    }

    static Map<String, String> stringMap(JsonNode node, String field) {
        JsonNode v = node.get(field);
        Map<String, String> map = new LinkedHashMap<>();
        if (v == null || v.isNull()) {
            return map;
        }
        if (!v.isObject()) {
            throw AirlockException.invalid("field '" + field + "' must be an object of strings");
        }
        for (Map.Entry<String, JsonNode> e : v.properties()) {
            if (!e.getValue().isString()) {
                throw AirlockException.invalid("field '" + field + "." + printable(e.getKey()) + "' must be a string");
            }
            map.put(e.getKey(), e.getValue().asString());
        }
        return map;
    }

    /** A size given as a byte count or as text such as "256m". */
    static Long size(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isIntegralNumber()) {
            if (!v.canConvertToLong()) {
                throw AirlockException.invalid("field '" + field + "' is too large: give a size such as \"256m\" or a byte count");
            }
            return v.asLong();
        }
        if (v.isString()) {
            return Limits.parseSize(field, v.asString());
        }
        throw AirlockException.invalid("field '" + field + "' must be a size such as \"256m\" or a byte count");
    }

    static ObjectNode limits(Limits l) {
        ObjectNode n = object();
        n.put("memoryBytes", l.memoryBytes());
        n.put("pids", l.pids());
        n.put("cpus", l.cpus());
        n.put("timeoutSeconds", l.timeout().toMillis() / 1000.0);
        n.put("outputBytes", l.outputBytes());
        n.put("fileSizeBytes", l.fileSizeBytes());
        n.put("openFiles", l.openFiles());
        n.put("diskBytes", l.diskBytes());
        return n;
    }

    static String specJson(SandboxSpec spec) {
        ObjectNode n = object();
        n.put("image", spec.image());
        n.set("limits", limits(spec.limits()));
        if (!spec.network().isNone()) {
            n.set("network", NetworkJson.write(spec.network()));
        }
        return n.toString();
    }

    /** An audit record as {@code GET /v1/audit} lists it: its detail as JSON, its chain hashes as stored. */
    static ObjectNode auditRecord(dev.airlock.server.audit.AuditRecord r) {
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

    static ObjectNode approval(dev.airlock.server.policy.Approval a) {
        ObjectNode n = object();
        n.put("id", a.id());
        n.put("state", a.state().name().toLowerCase(java.util.Locale.ROOT));
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

    /** {@code {"images": [{name, digest, sizeBytes, files, created, source}]}}: 'system' first, which has no digest. */
    static ObjectNode images(List<ImageInfo> images) {
        ObjectNode n = object();
        ArrayNode list = n.putArray("images");
        list.addObject().put("name", SandboxSpec.SYSTEM_IMAGE).putNull("digest").put("source", "the host's /usr");
        for (ImageInfo i : images) {
            list.addObject().put("name", i.name()).put("digest", i.digest()).put("sizeBytes", i.sizeBytes()).put("files", i.files())
                    .put("created", i.created().toString()).put("source", i.source());
        }
        return n;
    }

    /**
     * A sandbox as {@code viewer} sees it: its owner (and the server) whole; a client that reaches
     * it through {@code sandbox.any} sees the names of its environment variables but not their
     * values, which are its owner's (an agent's keys are often passed there).
     */
    static ObjectNode sandbox(ManagedSandbox s, dev.airlock.server.policy.Caller viewer) {
        ObjectNode n = sandbox(s);
        if (viewer != null && !viewer.isServer() && !viewer.client().name().equals(s.owner())) {
            ObjectNode env = object();
            s.sandbox().spec().env().keySet().forEach(k -> env.put(k, WITHHELD));
            n.set("env", env);
        }
        return n;
    }

    /** What an environment variable's value reads as to a viewer who is not the sandbox's owner. */
    static final String WITHHELD = "(withheld: not the owner)";

    /** The console's chart data: one array per series, all as long as {@code time}. */
    static ObjectNode metricsHistory(MetricsHistory.Series h) {
        ObjectNode n = object();
        n.put("intervalSeconds", h.intervalSeconds());
        n.set("time", MAPPER.valueToTree(h.time()));
        n.set("sandboxes", MAPPER.valueToTree(h.sandboxes()));
        n.set("executionsPerMinute", MAPPER.valueToTree(h.executionsPerMinute()));
        n.set("refusals", MAPPER.valueToTree(h.refusals()));
        n.set("egressBytes", MAPPER.valueToTree(h.egressBytes()));
        return n;
    }

    static ObjectNode sandbox(ManagedSandbox s) {
        ObjectNode n = object();
        n.put("id", s.id());
        n.put("owner", s.owner());
        n.put("profile", s.profile().name());
        n.put("state", !s.sandbox().isOpen() ? "destroyed" : s.sandbox().isPaused() ? "paused" : "running");
        n.put("isolation", s.isolation().id());
        n.put("image", s.sandbox().spec().image());
        n.put("imageDigest", s.sandbox().imageDigest());
        n.put("language", s.defaultLanguage() == null ? null : s.defaultLanguage().id());
        n.set("limits", limits(s.sandbox().spec().limits()));
        n.set("env", MAPPER.valueToTree(s.sandbox().spec().env()));
        n.set("network", NetworkJson.write(s.sandbox().network()));
        n.set("labels", MAPPER.valueToTree(s.labels()));
        n.put("createdAt", s.createdAt().toString());
        n.put("expiresAt", s.expiresAt().toString());
        n.put("idleTimeoutSeconds", s.idleTimeout().toSeconds());
        n.set("ports", MAPPER.valueToTree(s.profile().ports()));
        n.put("lastActivityAt", s.lastActivity().toString());
        var usage = s.sandbox().usage();
        if (usage == null) {
            n.putNull("usage");
        } else {
            n.putObject("usage").put("cpuSeconds", usage.cpuNanos() / 1e9).put("memoryBytes", usage.memoryBytes());
        }
        return n;
    }

    static ObjectNode snapshot(dev.airlock.server.command.Command.SnapshotView s) {
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

    static ObjectNode context(dev.airlock.server.command.Command.InterpreterContextView c) {
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
    static ObjectNode cell(dev.airlock.server.command.CellResult r) {
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

    static ObjectNode output(dev.airlock.server.command.CellResult.Output o) {
        ObjectNode n = object();
        n.put("type", o.kind());
        ObjectNode data = n.putObject("data");
        o.data().forEach(data::set);
        return n;
    }

    static ObjectNode error(dev.airlock.server.command.CellResult.CellError e) {
        ObjectNode n = object();
        n.put("name", e.name());
        n.put("value", e.value());
        n.set("traceback", MAPPER.valueToTree(e.traceback()));
        return n;
    }

    static ObjectNode result(ExecResult r) {
        ObjectNode n = object();
        n.put("stdout", r.stdoutText());
        n.put("stderr", r.stderrText());
        n.put("exitCode", r.exitCode());
        n.put("endReason", r.endReason().name().toLowerCase());
        n.put("timedOut", r.timedOut());
        n.put("oomKilled", r.oomKilled());
        n.put("truncated", r.truncated());
        n.put("durationMs", r.duration().toMillis());
        n.put("message", r.message());
        return n;
    }

    /** A process with the head of its output ({@value BackgroundProcess#OUTPUT_PREVIEW_BYTES} bytes a stream) once it ended. */
    static ObjectNode process(BackgroundProcess p) {
        return process(p, true);
    }

    /**
     * A process; {@code withOutput} false (a list) leaves out the output, so a list of every kept
     * process stays small whatever they wrote. All of it: {@code GET .../processes/{pid}/stdout}.
     */
    static ObjectNode process(BackgroundProcess p, boolean withOutput) {
        ObjectNode n = object();
        n.put("id", p.id());
        n.set("command", MAPPER.valueToTree(p.command()));
        n.put("state", p.running() ? "running" : "exited");
        n.put("tty", p.terminal() != null);
        n.put("pid", p.execution().pid());
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
            result.put("stdout", new String(SpilledOutput.head(p.output().stdoutFile(), BackgroundProcess.OUTPUT_PREVIEW_BYTES),
                    StandardCharsets.UTF_8));
            result.put("stderr", new String(SpilledOutput.head(p.output().stderrFile(), BackgroundProcess.OUTPUT_PREVIEW_BYTES),
                    StandardCharsets.UTF_8));
        } else {
            result.remove("stdout");
            result.remove("stderr");
        }
        n.set("result", result);
        return n;
    }

    static ObjectNode file(FileInfo f) {
        ObjectNode n = object();
        n.put("path", f.path());
        n.put("type", f.type().name().toLowerCase());
        n.put("size", f.size());
        n.put("mode", f.mode());
        n.put("modifiedAt", Instant.ofEpochMilli(f.modifiedMillis()).toString());
        n.put("linkTarget", f.linkTarget());
        return n;
    }

    static byte[] error(String code, String message) {
        return error(code, message, null);
    }

    /** An error body; a refusal's names the control and rule that made it: {@code {"error": {code, message, control, rule}}}. */
    static byte[] error(String code, String message, dev.airlock.server.control.Refusal refusal) {
        return errorNode(code, message, refusal).toString().getBytes(StandardCharsets.UTF_8);
    }

    /** {@link #error(String, String, dev.airlock.server.control.Refusal)} as a tree, for an answer that adds fields beside it. */
    static ObjectNode errorNode(String code, String message, dev.airlock.server.control.Refusal refusal) {
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

    /** Delegates to {@link Printable#of(String)}, the one implementation; kept so the server's many call sites stay short. */
    static String printable(String s) {
        return Printable.of(s);
    }

    /** Delegates to {@link Printable#of(String, int)}, the one implementation. */
    static String printable(String s, int max) {
        return Printable.of(s, max);
    }
}
