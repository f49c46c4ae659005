package dev.airlock.server.interpreter;

import dev.airlock.core.Printable;
import dev.airlock.server.command.CellResult;
import tools.jackson.databind.JsonNode;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** One cell of an {@link InterpreterContext} while it runs: its outputs as they arrive, kept within the cell's budget. */
final class PendingCell {

    /**
     * What each kept event (a stream chunk, an output) costs of a cell's budget beyond its text, so
     * that a flood of tiny events cannot make the server hold millions of objects.
     */
    private static final int EVENT_COST = 64;
    private static final Set<String> KEPT_MIME = Set.of("text/plain", "text/html", "text/markdown", "text/latex", "image/png",
            "image/jpeg", "image/svg+xml", "application/json");

    final long number;
    final CellResult.Listener listener;
    final java.util.concurrent.CountDownLatch done = new java.util.concurrent.CountDownLatch(1);
    final StringBuilder stdout = new StringBuilder();
    final StringBuilder stderr = new StringBuilder();
    final List<CellResult.Output> outputs = new ArrayList<>();
    CellResult.CellError error;
    long left;
    volatile boolean truncated;
    volatile String status;
    volatile String message;
    Integer executionCount;

    PendingCell(long number, CellResult.Listener listener, long budget) {
        this.number = number;
        this.listener = listener;
        this.left = budget;
    }

    synchronized void accept(String type, JsonNode line) {
        if (done.getCount() == 0) {
            return;
        }
        switch (type) {
            case "stream" -> {
                String text = line.path("text").asString("");
                if (!take(text.length())) {
                    return;
                }
                boolean err = "stderr".equals(line.path("name").asString(""));
                (err ? stderr : stdout).append(text);
                listener.stream(err ? "stderr" : "stdout", text);
            }
            case "result", "display" -> {
                Map<String, JsonNode> data = new LinkedHashMap<>();
                long size = 0;
                for (Map.Entry<String, JsonNode> e : line.path("data").properties()) {
                    if (KEPT_MIME.contains(e.getKey()) && (e.getValue().isString() || e.getKey().equals("application/json"))) {
                        data.put(e.getKey(), e.getValue());
                        size += e.getValue().isString() ? e.getValue().asString().length() : e.getValue().toString().length();
                    }
                }
                if (data.isEmpty() || !take(size)) {
                    return;
                }
                CellResult.Output output = new CellResult.Output(type, data);
                outputs.add(output);
                listener.output(output);
            }
            case "error" -> {
                List<String> traceback = new ArrayList<>();
                line.path("traceback").forEach(t -> traceback.add(t.asString("")));
                String name = line.path("ename").asString("");
                String value = line.path("evalue").asString("");
                if (error != null || !take(name.length() + value.length() + traceback.stream().mapToLong(String::length).sum())) {
                    return;
                }
                error = new CellResult.CellError(name, value, traceback);
                listener.error(error);
            }
            case "done" -> {
                if (line.path("truncated").asBoolean(false)) {
                    truncated = true;
                }
                if (line.path("executionCount").canConvertToInt()) {
                    executionCount = line.path("executionCount").asInt();
                }
                String s = line.path("status").asString("");
                String m = line.path("message").isString() ? Printable.of(line.path("message").asString(), 1000) : null;
                finish(Set.of("ok", "error", "timeout", "interrupted", "dead").contains(s) ? s : "error", m);
            }
            default -> {
            }
        }
    }

    private boolean take(long size) {
        size += EVENT_COST;
        if (size > left) {
            truncated = true;
            return false;
        }
        left -= size;
        return true;
    }

    synchronized void finish(String status, String message) {
        if (done.getCount() == 0) {
            return;
        }
        this.status = status;
        this.message = message;
        done.countDown();
    }

    synchronized CellResult result(String context, Duration duration) {
        String m = message;
        if (m == null && status.equals("timeout")) {
            m = "the cell ran past its timeout and was interrupted (KeyboardInterrupt); the context keeps its state";
        }
        return new CellResult(context, status, executionCount, stdout.toString(), stderr.toString(), outputs, error, truncated,
                duration, m);
    }
}
