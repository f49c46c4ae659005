package dev.airlock.client;

import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.json.JsonFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

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
 * The answer half of the wire format, and the shared mapper: response JSON to public records.
 * Jackson's tree model is used so that no Jackson annotation or type leaks into the public API.
 * Responses are read leniently about unknown fields (a newer server may add some) and strictly
 * about the fields this client relies on. Request bodies are built by {@link RequestBodies}.
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
        List<Integer> ports = new ArrayList<>();
        if (f.has("ports")) {
            f.array("ports").forEach(p -> ports.add(p.asInt()));
        }
        return new SandboxInfo(f.string("id"), f.optString("state"), f.optString("image"), effective,
                f.stringMap("env"), f.stringMap("labels"), f.optInstant("createdAt"), f.optInstant("expiresAt"),
                idle, f.optInstant("lastActivityAt"), ports);
    }

    static SnapshotInfo snapshot(JsonNode n) {
        Fields f = new Fields(n, "snapshot");
        List<String> leftOut = new ArrayList<>();
        if (f.has("leftOut")) {
            f.array("leftOut").forEach(l -> leftOut.add(l.asString()));
        }
        return new SnapshotInfo(f.string("id"), f.optString("sandbox"), f.optString("profile"), f.optString("image"),
                f.optString("imageDigest"), f.string("digest"), f.longValue("bytes"), f.intValue("files"), leftOut,
                f.optInstant("createdAt"), f.optInstant("expiresAt"), n.path("memory").asBoolean(false));
    }

    static List<SnapshotInfo> snapshots(JsonNode n) {
        List<SnapshotInfo> out = new ArrayList<>();
        for (JsonNode s : new Fields(n, "snapshot list").array("snapshots")) {
            out.add(snapshot(s));
        }
        return out;
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
    static InterpreterInfo context(JsonNode n) {
        Fields f = new Fields(n, "interpreter context");
        return new InterpreterInfo(f.string("id"), f.optString("language"), f.string("state"), f.optInstant("createdAt"),
                f.has("cells") ? f.intValue("cells") : 0, f.optString("message"));
    }

    static List<InterpreterInfo> contexts(JsonNode n) {
        List<InterpreterInfo> out = new ArrayList<>();
        for (JsonNode c : new Fields(n, "context list").array("contexts")) {
            out.add(context(c));
        }
        return out;
    }

    static CellOutput cellOutput(JsonNode n) {
        Fields f = new Fields(n, "cell output");
        Map<String, String> data = new LinkedHashMap<>();
        JsonNode d = f.object("data");
        if (d != null) {
            for (Map.Entry<String, JsonNode> e : d.properties()) {
                data.put(e.getKey(), e.getValue().isString() ? e.getValue().stringValue() : e.getValue().toString());
            }
        }
        return new CellOutput(f.string("type"), data);
    }

    static CellResult cell(JsonNode n) {
        Fields f = new Fields(n, "cell result");
        List<CellOutput> outputs = new ArrayList<>();
        for (JsonNode o : f.array("outputs")) {
            outputs.add(cellOutput(o));
        }
        CellResult.Error error = null;
        JsonNode e = f.object("error");
        if (e != null) {
            Fields ef = new Fields(e, "cell error");
            List<String> traceback = new ArrayList<>();
            e.path("traceback").forEach(t -> traceback.add(t.asString("")));
            error = new CellResult.Error(ef.optString("name"), ef.optString("value"), traceback);
        }
        Integer count = f.has("executionCount") ? f.intValue("executionCount") : null;
        Duration duration = f.has("durationMs") ? Duration.ofMillis(Math.max(0, f.longValue("durationMs"))) : Duration.ZERO;
        return new CellResult(f.optString("context"), f.string("status"), count, f.optString("stdout"), f.optString("stderr"), outputs,
                error, f.has("truncated") && f.bool("truncated"), duration, f.optString("message"));
    }

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
