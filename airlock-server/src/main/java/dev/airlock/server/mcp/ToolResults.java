package dev.airlock.server.mcp;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.ExecResult;
import dev.airlock.server.command.CellResult;
import dev.airlock.server.control.Refused;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Content;
import tools.jackson.databind.json.JsonMapper;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Turns what the service returned (or refused) into tool results. A result carries
 * {@code structuredContent} matching the tool's output schema and the same JSON as a text block,
 * for clients that read only text. {@code isError} is set when the program failed or the call was
 * refused, with a message that says what to change.
 */
final class ToolResults {

    static final JsonMapper JSON = JsonMapper.builder().build();

    /** The output schema of run_code and sandbox_exec. */
    static final String EXEC_OUTPUT_SCHEMA = """
            {
              "type": "object",
              "properties": {
                "stdout": {"type": "string", "description": "What the program wrote to standard output (UTF-8, capped)"},
                "stderr": {"type": "string", "description": "What the program wrote to standard error (UTF-8, capped)"},
                "exitCode": {"type": "integer", "description": "Exit code; 128+N when killed by signal N; 127 when it could not start; -1 when cancelled before it exited"},
                "endReason": {"type": "string", "enum": ["exited", "signaled", "timed_out", "oom_killed", "cancelled", "start_failed", "agent_killed"]},
                "timedOut": {"type": "boolean"},
                "oomKilled": {"type": "boolean"},
                "truncated": {"type": "boolean", "description": "stdout or stderr went over the output limit and was cut"},
                "durationMs": {"type": "integer"},
                "message": {"type": ["string", "null"], "description": "Why the run failed and what to change; null when it succeeded"},
                "files": {"type": "array", "description": "Files the program left in /workspace/output (run_code only)",
                  "items": {"type": "object", "properties": {"path": {"type": "string"}, "size": {"type": "integer"}, "returnedAs": {"type": "string"}}}}
              },
              "required": ["stdout", "stderr", "exitCode", "endReason", "timedOut", "oomKilled", "truncated", "durationMs", "message"]
            }
            """;

    private ToolResults() {
    }

    /** The result of an execution; {@code extra} (files, images) follows the text block. */
    static CallToolResult exec(ExecResult r, List<Map<String, Object>> files, List<Content> extra) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("stdout", r.stdoutText());
        s.put("stderr", r.stderrText());
        s.put("exitCode", r.exitCode());
        s.put("endReason", r.endReason().name().toLowerCase(Locale.ROOT));
        s.put("timedOut", r.timedOut());
        s.put("oomKilled", r.oomKilled());
        s.put("truncated", r.truncated());
        s.put("durationMs", r.duration().toMillis());
        s.put("message", failure(r));
        if (files != null) {
            s.put("files", files);
        }
        List<Content> content = new ArrayList<>();
        content.add(new McpSchema.TextContent(JSON.writeValueAsString(s)));
        content.addAll(extra);
        return CallToolResult.builder().content(content).structuredContent(s).isError(failed(r)).build();
    }

    static boolean failed(ExecResult r) {
        return r.endReason() != EndReason.EXITED || r.exitCode() != 0;
    }

    /** What went wrong, said so that the next attempt can do better; null if nothing did. */
    private static String failure(ExecResult r) {
        String truncated = r.truncated()
                ? " Output was cut at the sandbox's output limit: print less, or write large output to a file and read parts of it." : "";
        return switch (r.endReason()) {
            case EXITED -> r.exitCode() == 0 ? (truncated.isEmpty() ? null : truncated.trim())
                    : "The program exited with code " + r.exitCode() + ". Its stderr usually says why: fix the code or command and run it again." + truncated;
            case TIMED_OUT -> "The program " + r.message() + ". Make it finish sooner, or pass a larger timeoutSeconds (at most "
                    + ExecTimeouts.MAX_SECONDS + ")." + truncated;
            case OOM_KILLED -> "The program was " + r.message() + ". Use less memory, or run it in a sandbox made by sandbox_create"
                    + " with a larger limits.memory (such as \"2g\")." + truncated;
            case SIGNALED -> "The program was " + r.message() + "." + truncated;
            case CANCELLED -> "The run was cancelled (by the client, or because the sandbox was destroyed) and its processes were killed." + truncated;
            case START_FAILED -> "The program could not start: " + r.message()
                    + ". Check the program name: the sandbox has python3, node, bash, sh, java and the usual Unix tools.";
            case AGENT_KILLED -> "The run was stopped: " + r.message() + "." + truncated;
        };
    }

    /**
     * A cell's result for a model: the structured result with the text of each output (tables as
     * text/plain, also markdown and JSON when given), then each image as MCP image content.
     */
    static CallToolResult cell(CellResult r) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("context", r.context());
        s.put("status", r.status());
        s.put("executionCount", r.executionCount());
        s.put("stdout", r.stdout());
        s.put("stderr", r.stderr());
        List<Content> images = new ArrayList<>();
        List<Map<String, Object>> outputs = new ArrayList<>();
        for (CellResult.Output o : r.outputs()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("type", o.kind());
            for (String mime : List.of("text/plain", "text/markdown", "application/json")) {
                if (o.data().containsKey(mime)) {
                    m.put(mime, o.text(mime));
                }
            }
            for (String mime : List.of("image/png", "image/jpeg")) {
                if (o.data().containsKey(mime)) {
                    images.add(new McpSchema.ImageContent(null, o.text(mime).replaceAll("\\s", ""), mime));
                    m.put(mime, "returned as image content " + images.size());
                }
            }
            if (o.data().containsKey("text/html") && !m.containsKey("text/plain")) {
                m.put("text/html", o.text("text/html"));
            }
            outputs.add(m);
        }
        s.put("outputs", outputs);
        if (r.error() != null) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("name", r.error().name());
            e.put("value", r.error().value());
            e.put("traceback", String.join("\n", r.error().traceback()));
            s.put("error", e);
        }
        s.put("truncated", r.truncated());
        s.put("durationMs", r.duration().toMillis());
        s.put("message", switch (r.status()) {
            case "ok" -> r.truncated() ? "Some output was over the sandbox's output limit and was dropped: print or show less." : null;
            case "error" -> "The cell raised " + (r.error() == null ? "an error" : r.error().name()) + ": fix the code and run it again;"
                    + " what the context held before is still there.";
            case "timeout" -> "The cell ran past its timeout and was interrupted (KeyboardInterrupt). The context keeps its state: make"
                    + " the code faster, or pass a larger timeoutSeconds.";
            case "interrupted" -> "The cell was cancelled and interrupted (KeyboardInterrupt). The context keeps its state.";
            default -> "The interpreter's kernel died (" + r.message() + "), perhaps at the sandbox's memory limit. Restart it with"
                    + " interpreter_context (action 'restart'); its variables are lost, files in the sandbox stay.";
        });
        List<Content> content = new ArrayList<>();
        content.add(new McpSchema.TextContent(JSON.writeValueAsString(s)));
        content.addAll(images);
        return CallToolResult.builder().content(content).structuredContent(s).isError(!r.status().equals("ok")).build();
    }

    /** A successful non-execution result. */
    static CallToolResult ok(Map<String, Object> structured) {
        return CallToolResult.builder()
                .content(List.of(new McpSchema.TextContent(JSON.writeValueAsString(structured))))
                .structuredContent(structured)
                .isError(false)
                .build();
    }

    /** A call the service refused: bad arguments, a missing sandbox, a limit. */
    static CallToolResult refused(AirlockException e) {
        String prefix = switch (e.kind()) {
            case INVALID_ARGUMENT -> "Invalid arguments: ";
            case NOT_FOUND -> "Not found: ";
            case CONFLICT -> "Conflict: ";
            case PERMISSION_DENIED -> "Not permitted by this client's policy: ";
            case LIMIT_EXCEEDED -> "Refused by a limit: ";
            case TOO_LARGE -> "Too large: ";
            case GONE -> "Gone: ";
            case UNAVAILABLE -> "Unavailable on this host: ";
            case INTERNAL -> "Internal error: ";
        };
        return error(prefix + e.getMessage() + (e instanceof Refused r ? " " + r.refusal().tag() : ""));
    }

    static CallToolResult error(String message) {
        return CallToolResult.builder().content(List.of(new McpSchema.TextContent(message))).isError(true).build();
    }
}
