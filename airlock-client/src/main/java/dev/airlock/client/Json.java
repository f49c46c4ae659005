package dev.airlock.client;

import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.json.JsonFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The wire format, in one place: public records to request JSON, response JSON to public records.
 * Jackson's tree model is used so that no Jackson annotation or type leaks into the public API.
 * Responses are read leniently about unknown fields (a newer server may add some) and strictly
 * about the fields this client relies on.
 */
final class Json {

    /** Output of one execution can be up to 1 GiB per stream; Jackson's default string cap is 20M. */
    static final JsonMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
                    .streamReadConstraints(StreamReadConstraints.builder().maxStringLength(Integer.MAX_VALUE - 64).build())
                    .build())
            .build();

    private Json() {
    }

    /** A response that does not match the contract; the transport adds status and request. */
    static final class BadResponse extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadResponse(String problem) {
            super(problem, null, false, false);
        }
    }

    // ---- requests

    static ObjectNode spec(SandboxSpec spec) {
        ObjectNode o = MAPPER.createObjectNode();
        if (spec.image() != null) {
            o.put("image", spec.image());
        }
        if (spec.profile() != null) {
            o.put("profile", spec.profile());
        }
        ObjectNode l = MAPPER.createObjectNode();
        Limits limits = spec.limits();
        putIfSet(l, "memory", limits.memory());
        if (limits.pids() != null) l.put("pids", limits.pids());
        if (limits.cpus() != null) l.put("cpus", limits.cpus());
        if (limits.timeout() != null) putSeconds(l, "timeoutSeconds", limits.timeout());
        putIfSet(l, "outputLimit", limits.outputLimit());
        putIfSet(l, "fileSize", limits.fileSize());
        if (limits.openFiles() != null) l.put("openFiles", limits.openFiles());
        putIfSet(l, "disk", limits.disk());
        if (!l.isEmpty()) {
            o.set("limits", l);
        }
        if (!spec.env().isEmpty()) {
            o.set("env", stringMap(spec.env()));
        }
        if (!spec.labels().isEmpty()) {
            o.set("labels", stringMap(spec.labels()));
        }
        if (spec.ttl() != null) {
            o.put("ttlSeconds", wholeSecondsUp(spec.ttl()));
        }
        if (spec.idleTimeout() != null) {
            o.put("idleTimeoutSeconds", wholeSecondsUp(spec.idleTimeout()));
        }
        return o;
    }

    static ObjectNode exec(Exec exec, boolean background) {
        ObjectNode o = MAPPER.createObjectNode();
        if (exec.command() != null) {
            ArrayNode argv = o.putArray("command");
            exec.command().forEach(argv::add);
        } else {
            o.put("language", exec.language().id());
            o.put("code", exec.code());
        }
        putIfSet(o, "cwd", exec.cwd());
        if (!exec.env().isEmpty()) {
            o.set("env", stringMap(exec.env()));
        }
        putStdin(o, exec.stdinBytes());
        if (exec.timeout() != null) {
            putSeconds(o, "timeoutSeconds", exec.timeout());
        }
        if (background) {
            o.put("background", true);
        }
        return o;
    }

    /** A one-shot run: {@code POST /v1/run}. */
    static ObjectNode run(Run run) {
        ObjectNode o = MAPPER.createObjectNode();
        o.put("language", run.language().id());
        o.put("code", run.code());
        putStdin(o, run.stdinBytes());
        if (!run.files().isEmpty()) {
            o.set("files", stringMap(run.files()));
        }
        if (run.timeout() != null) {
            putSeconds(o, "timeoutSeconds", run.timeout());
        }
        return o;
    }

    /** Text stdin stays text; anything that is not UTF-8 goes as base64. */
    private static void putStdin(ObjectNode o, byte[] stdin) {
        if (stdin.length > 0) {
            String text = utf8OrNull(stdin);
            if (text != null) {
                o.put("stdin", text);
            } else {
                o.put("stdinBase64", Base64.getEncoder().encodeToString(stdin));
            }
        }
    }

    static ObjectNode object(String k1, Object v1) {
        ObjectNode o = MAPPER.createObjectNode();
        o.set(k1, MAPPER.valueToTree(v1));
        return o;
    }

    static ObjectNode object(String k1, Object v1, String k2, Object v2) {
        ObjectNode o = object(k1, v1);
        o.set(k2, MAPPER.valueToTree(v2));
        return o;
    }

    /** Whole seconds as an integer, fractions as a decimal with millisecond precision. */
    static void putSeconds(ObjectNode o, String field, Duration d) {
        long millis = d.toMillis();
        if (millis % 1000 == 0) {
            o.put(field, millis / 1000);
        } else {
            o.put(field, millis / 1000.0);
        }
    }

    static long wholeSecondsUp(Duration d) {
        long s = d.getSeconds();
        return d.getNano() > 0 ? s + 1 : s;
    }

    private static void putIfSet(ObjectNode o, String field, String value) {
        if (value != null) {
            o.put(field, value);
        }
    }

    private static ObjectNode stringMap(Map<String, String> m) {
        ObjectNode o = MAPPER.createObjectNode();
        m.forEach(o::put);
        return o;
    }

    private static String utf8OrNull(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    // ---- responses

    static SandboxInfo sandbox(JsonNode n) {
        Fields f = new Fields(n, "sandbox");
        JsonNode limits = f.object("limits");
        EffectiveLimits effective = null;
        if (limits != null) {
            Fields l = new Fields(limits, "sandbox limits");
            effective = new EffectiveLimits(
                    l.longValue("memoryBytes"), l.intValue("pids"), l.doubleValue("cpus"),
                    l.secondsAsDuration("timeoutSeconds"), l.longValue("outputBytes"), l.longValue("fileSizeBytes"),
                    l.intValue("openFiles"), l.longValue("diskBytes"));
        }
        Duration idle = f.has("idleTimeoutSeconds") ? f.secondsAsDuration("idleTimeoutSeconds") : null;
        return new SandboxInfo(f.string("id"), f.optString("state"), f.optString("image"), effective,
                f.stringMap("env"), f.stringMap("labels"), f.optInstant("createdAt"), f.optInstant("expiresAt"),
                idle, f.optInstant("lastActivityAt"));
    }

    static List<SandboxInfo> sandboxes(JsonNode n) {
        List<SandboxInfo> out = new ArrayList<>();
        for (JsonNode s : new Fields(n, "sandbox list").array("sandboxes")) {
            out.add(sandbox(s));
        }
        return out;
    }

    /**
     * An execution result. {@code stdout}/{@code stderr} absent from a streamed result line are
     * taken from {@code streamedOut}/{@code streamedErr}, which the caller collected from the chunks.
     */
    static ExecResult result(JsonNode n, String streamedOut, String streamedErr) {
        Fields f = new Fields(n, "execution result");
        EndReason reason = EndReason.fromWire(f.optString("endReason"));
        String stdout = f.has("stdout") ? f.optString("stdout") : streamedOut;
        String stderr = f.has("stderr") ? f.optString("stderr") : streamedErr;
        boolean timedOut = f.has("timedOut") ? f.bool("timedOut") : reason == EndReason.TIMED_OUT;
        boolean oomKilled = f.has("oomKilled") ? f.bool("oomKilled") : reason == EndReason.OOM_KILLED;
        Duration duration = f.has("durationMs") ? Duration.ofMillis(Math.max(0, f.longValue("durationMs"))) : Duration.ZERO;
        return new ExecResult(stdout, stderr, f.intValue("exitCode"), reason, timedOut, oomKilled,
                f.has("truncated") && f.bool("truncated"), duration, f.optString("message"));
    }

    static ExecResult result(JsonNode n) {
        return result(n, "", "");
    }

    /** A one-shot run's answer: an execution result plus {@code outputs}. */
    static RunResult runResult(JsonNode n) {
        List<RunResult.Output> outputs = new ArrayList<>();
        for (JsonNode o : new Fields(n, "run result").array("outputs")) {
            Fields f = new Fields(o, "run output");
            String path = f.string("path");
            byte[] content = null;
            if (f.has("contentBase64")) {
                try {
                    content = Base64.getDecoder().decode(f.string("contentBase64"));
                } catch (IllegalArgumentException e) {
                    throw new BadResponse("run output '" + Errors.sanitize(path, 80) + "' field 'contentBase64' is not base64");
                }
            }
            String notReturned = content == null ? f.string("notReturned") : null;
            outputs.add(new RunResult.Output(path, Math.max(0, f.longValue("size")), content, notReturned));
        }
        return new RunResult(result(n), outputs);
    }

    /** A background process snapshot: id, command, state, startedAt, result. */
    static BackgroundProcess.Snapshot process(JsonNode n) {
        Fields f = new Fields(n, "process");
        List<String> command = new ArrayList<>();
        JsonNode argv = n.path("command");
        if (argv.isArray()) {
            for (JsonNode a : argv) {
                command.add(a.isString() ? a.stringValue() : a.toString());
            }
        }
        JsonNode result = n.path("result");
        return new BackgroundProcess.Snapshot(f.string("id"), List.copyOf(command), f.optString("state"),
                f.optInstant("startedAt"), result.isObject() ? result(result) : null);
    }

    static FileInfo file(JsonNode n) {
        Fields f = new Fields(n, "file info");
        return new FileInfo(f.string("path"), FileType.fromWire(f.optString("type")),
                f.has("size") ? Math.max(0, f.longValue("size")) : 0, f.has("mode") ? f.intValue("mode") : 0,
                f.optInstant("modifiedAt"), f.optString("linkTarget"));
    }

    static List<FileInfo> files(JsonNode n) {
        List<FileInfo> out = new ArrayList<>();
        for (JsonNode e : new Fields(n, "directory listing").array("entries")) {
            out.add(file(e));
        }
        return out;
    }

    static ServerHealth health(JsonNode n) {
        Fields f = new Fields(n, "health");
        return new ServerHealth(f.optString("status"), f.has("sandboxes") ? f.intValue("sandboxes") : 0);
    }

    /** Typed access to one JSON object, with messages that name the object and field. */
    static final class Fields {
        private final JsonNode node;
        private final String what;

        Fields(JsonNode node, String what) {
            if (node == null || !node.isObject()) {
                throw new BadResponse(what + " is not a JSON object");
            }
            this.node = node;
            this.what = what;
        }

        boolean has(String field) {
            JsonNode v = node.get(field);
            return v != null && !v.isNull();
        }

        private JsonNode required(String field) {
            JsonNode v = node.get(field);
            if (v == null || v.isNull()) {
                throw new BadResponse(what + " has no '" + field + "'");
            }
            return v;
        }

        String string(String field) {
            JsonNode v = required(field);
            if (!v.isString()) {
                throw new BadResponse(what + " field '" + field + "' is not a string");
            }
            return v.stringValue();
        }

        String optString(String field) {
            return has(field) ? string(field) : null;
        }

        long longValue(String field) {
            JsonNode v = required(field);
            if (!v.isNumber() || !v.canConvertToLong()) {
                throw new BadResponse(what + " field '" + field + "' is not a whole number");
            }
            return v.asLong();
        }

        int intValue(String field) {
            JsonNode v = required(field);
            if (!v.isNumber() || !v.canConvertToInt()) {
                throw new BadResponse(what + " field '" + field + "' is not a whole number");
            }
            return v.asInt();
        }

        double doubleValue(String field) {
            JsonNode v = required(field);
            if (!v.isNumber()) {
                throw new BadResponse(what + " field '" + field + "' is not a number");
            }
            return v.asDouble();
        }

        boolean bool(String field) {
            JsonNode v = required(field);
            if (!v.isBoolean()) {
                throw new BadResponse(what + " field '" + field + "' is not true or false");
            }
            return v.booleanValue();
        }

        Duration secondsAsDuration(String field) {
            double s = doubleValue(field);
            if (!(s >= 0) || s > Long.MAX_VALUE / 1_000_000_000L) {
                throw new BadResponse(what + " field '" + field + "' is not a number of seconds");
            }
            return Duration.ofNanos(Math.round(s * 1e9));
        }

        Instant optInstant(String field) {
            if (!has(field)) {
                return null;
            }
            String s = string(field);
            try {
                return Instant.parse(s);
            } catch (DateTimeParseException e) {
                try {
                    return OffsetDateTime.parse(s).toInstant();
                } catch (DateTimeParseException e2) {
                    throw new BadResponse(what + " field '" + field + "' is not an ISO-8601 time");
                }
            }
        }

        JsonNode object(String field) {
            if (!has(field)) {
                return null;
            }
            JsonNode v = node.get(field);
            if (!v.isObject()) {
                throw new BadResponse(what + " field '" + field + "' is not an object");
            }
            return v;
        }

        Iterable<JsonNode> array(String field) {
            JsonNode v = required(field);
            if (!v.isArray()) {
                throw new BadResponse(what + " field '" + field + "' is not an array");
            }
            return v;
        }

        Map<String, String> stringMap(String field) {
            JsonNode o = object(field);
            Map<String, String> m = new LinkedHashMap<>();
            if (o != null) {
                for (Map.Entry<String, JsonNode> e : o.properties()) {
                    if (!e.getValue().isString()) {
                        throw new BadResponse(what + " field '" + field + "' has a value that is not a string");
                    }
                    m.put(e.getKey(), e.getValue().stringValue());
                }
            }
            return m;
        }
    }
}
