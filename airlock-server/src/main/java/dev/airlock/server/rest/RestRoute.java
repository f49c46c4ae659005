package dev.airlock.server.rest;

import dev.airlock.server.policy.Operation;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One row of the REST API's routing table ({@link RestApi#routes}): a method, a path template
 * whose {@code {name}} segments are parameters (a last {@value #REST} takes the rest of the path), the operation a client must be granted (null: a
 * public route, answered without a token), and the handler that parses the request into a command.
 */
record RestRoute(String method, String template, Operation operation, Handler handler) {

    /** A template's last segment that matches the rest of the path, however many segments (none included). */
    static final String REST = "{path...}";

    /** Parses one request into commands, executes them, and writes the answer. */
    @FunctionalInterface
    interface Handler {
        void handle(RestCall call) throws IOException;
    }

    /** The path's parameters when it fits the template, else null. */
    Map<String, String> match(List<String> segments) {
        List<String> t = segments(template);
        if (!t.isEmpty() && t.getLast().equals(REST)) {
            if (segments.size() < t.size() - 1) {
                return null;
            }
            t = new ArrayList<>(t.subList(0, t.size() - 1));
            segments = segments.subList(0, t.size());
        }
        if (t.size() != segments.size()) {
            return null;
        }
        Map<String, String> params = new HashMap<>();
        for (int i = 0; i < t.size(); i++) {
            String part = t.get(i);
            if (part.startsWith("{") && part.endsWith("}")) {
                params.put(part.substring(1, part.length() - 1), segments.get(i));
            } else if (!part.equals(segments.get(i))) {
                return null;
            }
        }
        return params;
    }

    /** The non-empty segments of a path. */
    static List<String> segments(String path) {
        List<String> parts = new ArrayList<>();
        for (String p : path.split("/")) {
            if (!p.isEmpty()) {
                parts.add(p);
            }
        }
        return parts;
    }
}
