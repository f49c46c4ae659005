package dev.airlock.core;

import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.api.lowlevel.Compose;
import org.snakeyaml.engine.v2.exceptions.Mark;
import org.snakeyaml.engine.v2.exceptions.MarkedYamlEngineException;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;
import org.snakeyaml.engine.v2.nodes.MappingNode;
import org.snakeyaml.engine.v2.nodes.Node;
import org.snakeyaml.engine.v2.nodes.NodeTuple;
import org.snakeyaml.engine.v2.nodes.ScalarNode;
import org.snakeyaml.engine.v2.nodes.SequenceNode;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * One node of a YAML file an operator wrote (a policy, an image recipe) with its file and field
 * path, such as {@code profiles.default.limits.memory}: every value a reader takes goes through
 * it, so that every error names the file, the line and the field, and says what to write instead.
 */
public final class YamlField {

    private final String source;
    private final Node node;
    private final String path;

    /**
     * @param source the file's name in errors
     * @param path   the field path, empty for the document
     */
    public YamlField(String source, Node node, String path) {
        this.source = source;
        this.node = node;
        this.path = path;
    }

    /**
     * Reads a YAML document (at most 16 aliases per collection, so a small file cannot expand into
     * a huge one); its root. A document that is not YAML is an error naming its line; an empty one
     * is an error saying {@code whatItNeeds}, such as "it needs at least 'profiles' and 'clients'".
     *
     * @param source the file's name in errors
     */
    public static YamlField parse(String source, String text, String whatItNeeds) {
        Node root;
        try {
            root = new Compose(LoadSettings.builder().setMaxAliasesForCollections(16).setLabel(source).build())
                    .composeString(text).orElse(null);
        } catch (MarkedYamlEngineException e) {
            int line = e.getProblemMark().map(Mark::getLine).orElse(-1) + 1;
            throw AirlockException.invalid(source + " line " + line + ": not valid YAML: " + e.getProblem());
        } catch (YamlEngineException e) {
            throw AirlockException.invalid(source + ": not valid YAML: " + e.getMessage());
        }
        if (root == null) {
            throw AirlockException.invalid(source + " is empty: " + whatItNeeds);
        }
        return new YamlField(source, root, "");
    }

    private YamlField at(Node other, String otherPath) {
        return new YamlField(source, other, otherPath);
    }

    public Node node() {
        return node;
    }

    public String path() {
        return path;
    }

    public int line() {
        return node.getStartMark().map(Mark::getLine).orElse(-1) + 1;
    }

    public AirlockException error(String message) {
        return AirlockException.invalid(source + " line " + line() + (path.isEmpty() ? "" : ", " + path) + ": " + message);
    }

    /** Runs a check that throws AirlockException, and puts this node's line and field on its message. */
    public <T> T check(Supplier<T> parse) {
        try {
            return parse.get();
        } catch (AirlockException e) {
            throw error(e.getMessage());
        }
    }

    /** The field path of {@code key} under this node. */
    public String child(String key) {
        return path.isEmpty() ? key : path + "." + key;
    }

    /** The fields of a mapping, in file order; a field not in {@code allowed} (null: any) or given twice is an error. */
    public Map<String, YamlField> map(Set<String> allowed) {
        if (!(node instanceof MappingNode m)) {
            throw error("expected a mapping (key: value lines)");
        }
        Map<String, YamlField> out = new LinkedHashMap<>();
        for (NodeTuple t : m.getValue()) {
            String k = at(t.getKeyNode(), path).string();
            if (allowed != null && !allowed.contains(k)) {
                throw at(t.getKeyNode(), child(k)).error("unknown field '" + Printable.of(k) + "': allowed here are "
                        + String.join(", ", new TreeSet<>(allowed)));
            }
            if (out.containsKey(k)) {
                throw at(t.getKeyNode(), child(k)).error("'" + Printable.of(k) + "' appears twice: keep one");
            }
            out.put(k, at(t.getValueNode(), child(k)));
        }
        return out;
    }

    /** A mapping whose keys are names the user chose, each matching {@code pattern}. */
    public Map<String, YamlField> named(Pattern pattern) {
        Map<String, YamlField> out = map(null);
        for (Map.Entry<String, YamlField> e : out.entrySet()) {
            if (!pattern.matcher(e.getKey()).matches()) {
                throw e.getValue().error("'" + Printable.of(e.getKey()) + "' is not a valid name: use " + pattern.pattern());
            }
        }
        return out;
    }

    public List<YamlField> list() {
        if (!(node instanceof SequenceNode s)) {
            throw error("expected a list, such as [a, b]");
        }
        List<YamlField> out = new ArrayList<>();
        for (int i = 0; i < s.getValue().size(); i++) {
            out.add(at(s.getValue().get(i), path + "[" + i + "]"));
        }
        return out;
    }

    public String string() {
        if (!(node instanceof ScalarNode s)) {
            throw error("expected a single value, not a list or mapping");
        }
        return s.getValue();
    }

    public long integer(long min, long max) {
        String s = string();
        try {
            long v = Long.parseLong(s.replace("_", ""));
            if (v < min || v > max) {
                throw error(s + " is out of range: give " + min + " to " + max);
            }
            return v;
        } catch (NumberFormatException e) {
            throw error("'" + Printable.of(s) + "' is not a whole number");
        }
    }

    public boolean bool() {
        String s = string();
        return switch (s) {
            case "true" -> true;
            case "false" -> false;
            default -> throw error("'" + Printable.of(s) + "' is not true or false");
        };
    }

    public double decimal() {
        String s = string();
        try {
            return Double.parseDouble(s);
        } catch (NumberFormatException e) {
            throw error("'" + Printable.of(s) + "' is not a number");
        }
    }

    /** A size such as {@code 512m} (see {@link Limits#parseSize}). */
    public long size() {
        String s = string();
        return check(() -> Limits.parseSize(path, s));
    }
}
