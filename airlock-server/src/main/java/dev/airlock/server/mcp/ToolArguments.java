package dev.airlock.server.mcp;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The arguments of one tool call, checked field by field. Every refusal names the field and says
 * what to send instead, because the reader is a model that will retry with what it is told.
 */
final class ToolArguments {

    private final String tool;
    private final Map<String, Object> args;

    ToolArguments(String tool, Map<String, Object> args, Set<String> allowed) {
        this.tool = tool;
        this.args = args == null ? Map.of() : args;
        for (String name : this.args.keySet()) {
            if (!allowed.contains(name)) {
                throw invalid("unknown argument '" + Printable.of(name) + "': " + tool + " takes " + String.join(", ", new TreeSet<>(allowed)));
            }
        }
    }

    boolean has(String name) {
        return args.get(name) != null;
    }

    String string(String name) {
        Object v = args.get(name);
        if (v == null) {
            return null;
        }
        if (!(v instanceof String s)) {
            throw invalid("argument '" + name + "' must be a string");
        }
        return s;
    }

    /** An optional true/false argument; {@code otherwise} when it is absent. */
    boolean bool(String name, boolean otherwise) {
        Object v = args.get(name);
        if (v == null) {
            return otherwise;
        }
        if (!(v instanceof Boolean b)) {
            throw invalid("argument '" + name + "' must be true or false");
        }
        return b;
    }

    String requiredString(String name, String example) {
        String s = string(name);
        if (s == null || s.isEmpty()) {
            throw invalid("argument '" + name + "' is required, for example " + example);
        }
        return s;
    }

    Double number(String name, double min, double max) {
        Object v = args.get(name);
        if (v == null) {
            return null;
        }
        if (!(v instanceof Number n)) {
            throw invalid("argument '" + name + "' must be a number");
        }
        double d = n.doubleValue();
        if (Double.isNaN(d) || d < min || d > max) {
            throw invalid("argument '" + name + "' is " + n + ": give a number from " + format(min) + " to " + format(max));
        }
        return d;
    }

    Map<String, String> stringMap(String name) {
        Object v = args.get(name);
        Map<String, String> map = new LinkedHashMap<>();
        if (v == null) {
            return map;
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw invalid("argument '" + name + "' must be an object whose values are strings");
        }
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (!(e.getValue() instanceof String s)) {
                throw invalid("argument '" + name + "." + Printable.of(String.valueOf(e.getKey())) + "' must be a string");
            }
            map.put(String.valueOf(e.getKey()), s);
        }
        return map;
    }

    /**
     * A command given either as an argument list, or as one string: a shell line, run as
     * {@code sh -c <line>} (models send strings). Null when absent.
     */
    List<String> command(String name) {
        if (args.get(name) instanceof String line) {
            if (line.isBlank()) {
                throw invalid("argument '" + name + "' is empty: give a shell line such as \"ls -la\", or an array such as [\"ls\", \"-la\"]");
            }
            return List.of("sh", "-c", line);
        }
        if (args.get(name) != null && !(args.get(name) instanceof List<?>)) {
            throw invalid("argument '" + name + "' must be a shell line (a string) or an array of strings, such as [\"ls\", \"-la\"]");
        }
        return stringList(name);
    }

    List<String> stringList(String name) {
        Object v = args.get(name);
        if (v == null) {
            return null;
        }
        if (!(v instanceof List<?> list)) {
            throw invalid("argument '" + name + "' must be an array of strings, such as [\"ls\", \"-la\"]");
        }
        List<String> out = new ArrayList<>();
        for (Object o : list) {
            if (!(o instanceof String s)) {
                throw invalid("argument '" + name + "' must hold only strings");
            }
            out.add(s);
        }
        return out;
    }

    Map<String, Object> object(String name, Set<String> allowed) {
        Object v = args.get(name);
        if (v == null) {
            return Map.of();
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw invalid("argument '" + name + "' must be an object");
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            String key = String.valueOf(e.getKey());
            if (!allowed.contains(key)) {
                throw invalid("unknown field '" + name + "." + Printable.of(key) + "': allowed are " + String.join(", ", new TreeSet<>(allowed)));
            }
            out.put(key, e.getValue());
        }
        return out;
    }

    private AirlockException invalid(String message) {
        return AirlockException.invalid(tool + ": " + message);
    }

    private static String format(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : Double.toString(d);
    }
}
