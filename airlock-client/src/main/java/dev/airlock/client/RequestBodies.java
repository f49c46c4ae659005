package dev.airlock.client;

import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;

import static dev.airlock.client.Json.MAPPER;

/**
 * The request half of the wire format: public records to the JSON bodies this client sends.
 * Built with Jackson's tree model (on {@link Json#MAPPER}) so no Jackson type leaks into the
 * public API; the answers are read by {@link Json}.
 */
final class RequestBodies {

    private RequestBodies() {
    }

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
    private static void putSeconds(ObjectNode o, String field, Duration d) {
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
}
