package dev.airlock.server.wire;

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
public final class Json {

    public static final JsonMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private Json() {
    }

    public static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    /** Parses a request body that must be a JSON object with only {@code allowed} fields. */
    public static JsonNode parseObject(byte[] body, Set<String> allowed) {
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

    public static String string(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isString()) {
            throw AirlockException.invalid("field '" + field + "' must be a string");
        }
        return v.asString();
    }

    public static Double number(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isNumber()) {
            throw AirlockException.invalid("field '" + field + "' must be a number");
        }
        return v.asDouble();
    }

    public static boolean bool(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return false;
        }
        if (!v.isBoolean()) {
            throw AirlockException.invalid("field '" + field + "' must be true or false");
        }
        return v.asBoolean();
    }

    public static Map<String, String> stringMap(JsonNode node, String field) {
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
    public static Long size(JsonNode node, String field) {
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

    public static ObjectNode limits(Limits l) {
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

    public static String specJson(SandboxSpec spec) {
        ObjectNode n = object();
        n.put("image", spec.image());
        n.set("limits", limits(spec.limits()));
        if (!spec.network().isNone()) {
            n.set("network", NetworkJson.write(spec.network()));
        }
        return n.toString();
    }

    /** {@code {"images": [{name, digest, sizeBytes, files, created, source}]}}: 'system' first, which has no digest. */
    public static ObjectNode images(List<ImageInfo> images) {
        ObjectNode n = object();
        ArrayNode list = n.putArray("images");
        list.addObject().put("name", SandboxSpec.SYSTEM_IMAGE).putNull("digest").put("source", "the host's /usr");
        for (ImageInfo i : images) {
            list.addObject().put("name", i.name()).put("digest", i.digest()).put("sizeBytes", i.sizeBytes()).put("files", i.files())
                    .put("created", i.created().toString()).put("source", i.source());
        }
        return n;
    }

    public static ObjectNode result(ExecResult r) {
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

    public static ObjectNode file(FileInfo f) {
        ObjectNode n = object();
        n.put("path", f.path());
        n.put("type", f.type().name().toLowerCase());
        n.put("size", f.size());
        n.put("mode", f.mode());
        n.put("modifiedAt", Instant.ofEpochMilli(f.modifiedMillis()).toString());
        n.put("linkTarget", f.linkTarget());
        return n;
    }

    /** Delegates to {@link Printable#of(String)}, the one implementation; kept so the server's many call sites stay short. */
    public static String printable(String s) {
        return Printable.of(s);
    }

    /** Delegates to {@link Printable#of(String, int)}, the one implementation. */
    public static String printable(String s, int max) {
        return Printable.of(s, max);
    }
}
