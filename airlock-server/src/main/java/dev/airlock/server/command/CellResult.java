package dev.airlock.server.command;

import tools.jackson.databind.JsonNode;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * What one cell run in an interpreter context gave back: its streams, every result and display
 * output with its MIME bundle, the error if it raised one, and how it ended. Built by the server
 * from what the context's bridge reported, within the sandbox's output limit per cell.
 *
 * @param status         {@code ok}, {@code error} (the cell raised), {@code timeout} or
 *                       {@code interrupted} (a KeyboardInterrupt stopped it; the context lives on),
 *                       or {@code dead} (the kernel died: restart the context)
 * @param executionCount the kernel's count of this cell, or null
 * @param outputs        the value of the last expression ({@code result}) and every display, in order
 * @param error          what the cell raised, or null
 * @param truncated      some output was over the limit and dropped
 * @param message        why it ended as it did, for a person, or null
 */
public record CellResult(String context, String status, Integer executionCount, String stdout, String stderr, List<Output> outputs,
                         CellError error, boolean truncated, Duration duration, String message) {

    public CellResult {
        outputs = List.copyOf(outputs);
    }

    /**
     * One result or display output: MIME type to value. Values are strings (base64 for images)
     * except {@code application/json}, which is any JSON value.
     *
     * @param kind {@code result} for the value of the cell's last expression, else {@code display}
     */
    public record Output(String kind, Map<String, JsonNode> data) {
        public Output {
            data = Map.copyOf(data);
        }

        /** The value of {@code mime} as text, or null when absent. */
        public String text(String mime) {
            JsonNode v = data.get(mime);
            return v == null ? null : v.isString() ? v.asString() : v.toString();
        }
    }

    /** An exception a cell raised, its traceback without terminal colours. */
    public record CellError(String name, String value, List<String> traceback) {
        public CellError {
            traceback = List.copyOf(traceback);
        }
    }

    /** Receives a cell's outputs as the kernel produces them; called on one thread, in order, and must not block. */
    public interface Listener {
        Listener NONE = new Listener() { };

        default void stream(String name, String text) { }

        default void output(Output output) { }

        default void error(CellError error) { }
    }
}
