package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;
import org.snakeyaml.engine.v2.exceptions.Mark;
import org.snakeyaml.engine.v2.nodes.MappingNode;
import org.snakeyaml.engine.v2.nodes.Node;
import org.snakeyaml.engine.v2.nodes.NodeTuple;
import org.snakeyaml.engine.v2.nodes.ScalarNode;
import org.snakeyaml.engine.v2.nodes.SequenceNode;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * One node of a policy file's YAML with its file and field path, such as
 * {@code profiles.default.limits.memory}: every value the policy readers take goes through it, so
 * that every error names the file, the line and the field (see {@link PolicyFile}).
 */
final class PolicyNode {

    /** User-chosen names (profiles, clients, secrets). */
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final String source;
    private final Node node;
    private final String path;

    /** @param source the file's name in errors; @param path the field path, empty for the document */
    PolicyNode(String source, Node node, String path) {
        this.source = source;
        this.node = node;
        this.path = path;
    }

    private PolicyNode at(Node other, String otherPath) {
        return new PolicyNode(source, other, otherPath);
    }

    int line() {
        return node.getStartMark().map(Mark::getLine).orElse(-1) + 1;
    }

    AirlockException error(String message) {
        return AirlockException.invalid(source + " line " + line() + (path.isEmpty() ? "" : ", " + path) + ": " + message);
    }

    /** Runs a check that throws AirlockException, and puts this node's line and field on its message. */
    <T> T check(Supplier<T> parse) {
        try {
            return parse.get();
        } catch (AirlockException e) {
            throw error(e.getMessage());
        }
    }

    private String child(String key) {
        return path.isEmpty() ? key : path + "." + key;
    }

    /** The fields of a mapping, in file order; a field not in {@code allowed} (null: any) or given twice is an error. */
    Map<String, PolicyNode> map(Set<String> allowed) {
        if (!(node instanceof MappingNode m)) {
            throw error("expected a mapping (key: value lines)");
        }
        Map<String, PolicyNode> out = new LinkedHashMap<>();
        for (NodeTuple t : m.getValue()) {
            PolicyNode key = at(t.getKeyNode(), path);
            String k = key.string();
            if (allowed != null && !allowed.contains(k)) {
                throw at(t.getKeyNode(), child(k)).error("unknown field '" + k + "': allowed here are "
                        + String.join(", ", new TreeSet<>(allowed)));
            }
            if (out.containsKey(k)) {
                throw at(t.getKeyNode(), child(k)).error("'" + k + "' appears twice: keep one");
            }
            out.put(k, at(t.getValueNode(), child(k)));
        }
        return out;
    }

    /** A mapping of user-chosen names (profiles, clients, secrets). */
    Map<String, PolicyNode> named() {
        return named(NAME);
    }

    Map<String, PolicyNode> named(Pattern pattern) {
        Map<String, PolicyNode> out = map(null);
        for (Map.Entry<String, PolicyNode> e : out.entrySet()) {
            if (!pattern.matcher(e.getKey()).matches()) {
                throw e.getValue().error("'" + e.getKey() + "' is not a valid name: use " + pattern.pattern());
            }
        }
        return out;
    }

    List<PolicyNode> list() {
        if (!(node instanceof SequenceNode s)) {
            throw error("expected a list, such as [a, b]");
        }
        List<PolicyNode> out = new ArrayList<>();
        for (int i = 0; i < s.getValue().size(); i++) {
            out.add(at(s.getValue().get(i), path + "[" + i + "]"));
        }
        return out;
    }

    String string() {
        if (!(node instanceof ScalarNode s)) {
            throw error("expected a single value, not a list or mapping");
        }
        return s.getValue();
    }

    long integer(long min, long max) {
        String s = string();
        try {
            long v = Long.parseLong(s.replace("_", ""));
            if (v < min || v > max) {
                throw error(s + " is out of range: give " + min + " to " + max);
            }
            return v;
        } catch (NumberFormatException e) {
            throw error("'" + s + "' is not a whole number");
        }
    }

    boolean bool() {
        String s = string();
        return switch (s) {
            case "true" -> true;
            case "false" -> false;
            default -> throw error("'" + s + "' is not true or false");
        };
    }

    double decimal() {
        String s = string();
        try {
            return Double.parseDouble(s);
        } catch (NumberFormatException e) {
            throw error("'" + s + "' is not a number");
        }
    }

    long size() {
        String s = string();
        return check(() -> Limits.parseSize(path, s));
    }

    /** The subtree as JSON, for parsers shared with the REST API. */
    JsonNode json() {
        if (node instanceof MappingNode m) {
            ObjectNode o = JSON.createObjectNode();
            for (NodeTuple t : m.getValue()) {
                String k = at(t.getKeyNode(), path).string();
                o.set(k, at(t.getValueNode(), child(k)).json());
            }
            return o;
        }
        if (node instanceof SequenceNode s) {
            ArrayNode a = JSON.createArrayNode();
            s.getValue().forEach(n -> a.add(at(n, path).json()));
            return a;
        }
        String v = string();
        if (v.matches("-?[0-9]+")) {
            try {
                return JSON.getNodeFactory().numberNode(Long.parseLong(v));
            } catch (NumberFormatException e) {
                return JSON.getNodeFactory().stringNode(v);
            }
        }
        return JSON.getNodeFactory().stringNode(v);
    }
}
