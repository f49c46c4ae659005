package dev.airlock.server.audit;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One audit record as stored. {@code detail} is canonical JSON (keys sorted, no white space);
 * {@code hash} is SHA-256 over {@code prevHash} (hex, ASCII) followed by {@link #canonicalBytes()}.
 */
public record AuditRecord(long seq, String time, String kind, String actor, String sandbox, String detail,
                          String prevHash, String hash) {

    /** The kinds of records. */
    public static final String REQUEST = "request";
    public static final String AUTHORIZATION = "authorization";
    public static final String EXECUTION = "execution";
    public static final String RESULT = "result";
    /** A signal (a kill among them) sent to a background process by a client. */
    public static final String SIGNAL = "signal";
    /** A WebSocket attached to, or detached from, the terminal of a background process. */
    public static final String TERMINAL = "terminal";
    public static final String LIFECYCLE = "lifecycle";
    public static final String FILE = "file";
    public static final String EGRESS = "egress";
    public static final String APPROVAL = "approval";
    /** The log's own events: records dropped on a full queue, records pruned (with the anchor). */
    public static final String AUDIT = "audit";
    public static final List<String> KINDS = List.of(REQUEST, AUTHORIZATION, EXECUTION, RESULT, SIGNAL, TERMINAL, LIFECYCLE, FILE, EGRESS, APPROVAL, AUDIT);

    /** prev_hash of the first record. */
    public static final String GENESIS = "0".repeat(64);

    static final JsonMapper JSON = JsonMapper.builder().build();

    /** The bytes the hash covers, besides prev_hash: a JSON array of the fields, in this order. */
    public byte[] canonicalBytes() {
        List<Object> fields = new ArrayList<>();
        fields.add(seq);
        fields.add(time);
        fields.add(kind);
        fields.add(actor);
        fields.add(sandbox);
        fields.add(detail);
        return JSON.writeValueAsString(fields).getBytes(StandardCharsets.UTF_8);
    }

    /** SHA-256 (hex) of prev_hash and the canonical bytes: what {@code hash} must be. */
    public String computeHash() {
        return Audit.digest(concat(prevHash.getBytes(StandardCharsets.US_ASCII), canonicalBytes())).substring("sha256:".length());
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = new byte[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /**
     * A detail map as its canonical JSON will have it ({@link #canonicalJson}), copied now: keys sorted at every level, nulls left out,
     * maps and lists copied, any other value that is not a plain immutable one turned into its JSON
     * tree. A caller's map may change once it has been recorded; the copy does not.
     */
    static Object snapshot(Map<String, ?> detail) {
        return sorted(detail);
    }

    /** The canonical JSON of a {@link #snapshot}: keys sorted at every level, nulls left out. */
    static String canonicalJson(Object snapshot) {
        return JSON.writeValueAsString(snapshot);
    }

    private static Object sorted(Object value) {
        if (value instanceof Map<?, ?> m) {
            TreeMap<String, Object> t = new TreeMap<>();
            m.forEach((k, v) -> {
                if (v != null) {
                    t.put(String.valueOf(k), sorted(v));
                }
            });
            return t;
        }
        if (value instanceof List<?> l) {
            return l.stream().map(AuditRecord::sorted).toList();
        }
        if (value == null || value instanceof String || value instanceof Boolean || value instanceof Integer || value instanceof Long
                || value instanceof Double || value instanceof Enum<?>) {
            return value;
        }
        return value instanceof JsonNode tree ? tree.deepCopy() : JSON.valueToTree(value);
    }

    /** The export format: one JSON object per record (a line of {@code airlock audit --json}). */
    public String toJsonLine() {
        ObjectNode n = JSON.createObjectNode();
        n.put("seq", seq);
        n.put("time", time);
        n.put("kind", kind);
        n.put("actor", actor);
        n.put("sandbox", sandbox);
        JsonNode d;
        try {
            d = JSON.readTree(detail);
        } catch (RuntimeException e) {
            d = JSON.getNodeFactory().stringNode(detail);
        }
        n.set("detail", d);
        n.put("detailCanonical", detail);
        n.put("prevHash", prevHash);
        n.put("hash", hash);
        return JSON.writeValueAsString(n);
    }

    /** The detail of a {@link #LIFECYCLE} record: what happened to the sandbox, and why (null when no reason is told). */
    public static Map<String, Object> lifecycle(String event, String reason) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("event", event);
        d.put("reason", reason);
        return d;
    }
}
