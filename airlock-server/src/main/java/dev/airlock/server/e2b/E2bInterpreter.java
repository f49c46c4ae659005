package dev.airlock.server.e2b;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Language;
import dev.airlock.server.command.CellResult;
import dev.airlock.server.command.Command;
import dev.airlock.server.http.LineStream;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.wire.Json;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Map;
import java.util.Set;

/**
 * E2B's code interpreter (port 49999, what {@code @e2b/code-interpreter} calls) on Airlock's
 * interpreter contexts: {@code POST /execute} runs a cell and streams its outputs as lines of JSON
 * as they come (stdout, stderr, each result with its formats, the error, the execution count);
 * {@code /contexts} creates, lists, restarts and deletes contexts. A cell that names no context
 * runs in the sandbox's first (made if it has none), as E2B's default context.
 */
final class E2bInterpreter {

    /** E2B's names of the MIME types of a result. */
    private static final Map<String, String> FORMATS = Map.ofEntries(
            Map.entry("text/plain", "text"), Map.entry("text/html", "html"), Map.entry("text/markdown", "markdown"),
            Map.entry("image/svg+xml", "svg"), Map.entry("image/png", "png"), Map.entry("image/jpeg", "jpeg"),
            Map.entry("application/pdf", "pdf"), Map.entry("text/latex", "latex"), Map.entry("application/json", "json"),
            Map.entry("application/javascript", "javascript"));

    void serve(E2bDoor.Call c, String sandbox) throws IOException {
        String method = c.req.getMethod();
        String path = c.path;
        if (method.equals("POST") && path.equals("/execute")) {
            execute(c, sandbox);
        } else if (method.equals("POST") && path.equals("/contexts")) {
            c.authorize(Operation.EXEC);
            JsonNode body = Json.parseObject(c.body(), Set.of("language", "cwd"));
            language(Json.string(body, "language"));
            String cwd = Json.string(body, "cwd");
            if (cwd != null && !Envd.path(cwd).equals(Envd.WORKSPACE)) {
                throw E2bDoor.unsupported("a context starts in " + Envd.HOME + " here: change directory in its first cell (os.chdir)");
            }
            c.send(200, context(c.execute(new Command.CreateContext(sandbox, Language.PYTHON))));
        } else if (method.equals("GET") && path.equals("/contexts")) {
            c.authorize(Operation.SANDBOX_READ);
            ArrayNode list = Json.MAPPER.createArrayNode();
            c.execute(new Command.ListContexts(sandbox)).forEach(x -> list.add(context(x)));
            c.send(200, list);
        } else if (method.equals("DELETE") && path.startsWith("/contexts/")) {
            c.authorize(Operation.EXEC);
            c.execute(new Command.DeleteContext(sandbox, path.substring("/contexts/".length())));
            c.resp.setStatus(204);
        } else if (method.equals("POST") && path.startsWith("/contexts/") && path.endsWith("/restart")) {
            c.authorize(Operation.EXEC);
            c.execute(new Command.RestartContext(sandbox, path.substring("/contexts/".length(), path.length() - "/restart".length())));
            c.resp.setStatus(204);
        } else {
            c.undecided();
            throw E2bDoor.unsupported("the code interpreter's " + method + " " + Json.printable(path, 120) + " is not served: it serves"
                    + " POST /execute and /contexts (create, list, restart, delete)");
        }
    }

    private static void language(String language) {
        if (language != null && !language.equals("python")) {
            throw AirlockException.invalid("contexts here run python, not " + Json.printable(language, 32));
        }
    }

    private static ObjectNode context(Command.InterpreterContextView x) {
        return Json.object().put("id", x.id()).put("language", x.language()).put("cwd", Envd.HOME);
    }

    private static void execute(E2bDoor.Call c, String sandbox) throws IOException {
        c.authorize(Operation.EXEC);
        JsonNode body = Json.parseObject(c.body(), Set.of("code", "context_id", "language", "env_vars"));
        language(Json.string(body, "language"));
        if (!Json.stringMap(body, "env_vars").isEmpty()) {
            throw E2bDoor.unsupported("'envs' of one cell are not supported here: give them to the sandbox (Sandbox.create({envs}))"
                    + " or set os.environ in the cell");
        }
        String code = Json.string(body, "code");
        String context = Json.string(body, "context_id");
        c.resp.setStatus(200);
        c.resp.setContentType("application/x-ndjson");
        OutputStream out = c.resp.getOutputStream();
        Lines lines = new Lines();
        CellResult result = lines.stream.run(out, () -> c.execute(new Command.RunCell(sandbox, context, code == null ? "" : code, null,
                lines)));
        if (result.error() == null && !result.status().equals("ok")) {
            // a timeout, an interrupt, a dead kernel: E2B's clients read an error
            LineStream.write(out, Json.object().put("type", "error").put("name", result.status())
                    .put("value", result.message() == null ? result.status() : result.message()).put("traceback", ""));
        }
        if (result.executionCount() != null) {
            LineStream.write(out, Json.object().put("type", "number_of_executions").put("execution_count", result.executionCount()));
        }
        LineStream.write(out, Json.object().put("type", "end_of_execution"));
    }

    /** A cell's events as E2B's lines, queued for the writer: the listener must not block. */
    private static final class Lines implements CellResult.Listener {
        // a heartbeat is a line of a type the SDKs pass over
        final LineStream stream = new LineStream(Json.object().put("type", "heartbeat"));

        @Override
        public void stream(String name, String text) {
            stream.add(Json.object().put("type", name.equals("stderr") ? "stderr" : "stdout").put("text", text));
        }

        @Override
        public void output(CellResult.Output output) {
            ObjectNode line = Json.object().put("type", "result");
            output.data().forEach((mime, value) -> line.set(FORMATS.getOrDefault(mime, mime), value));
            line.put("is_main_result", output.kind().equals("result"));
            stream.add(line);
        }

        @Override
        public void error(CellResult.CellError error) {
            stream.add(Json.object().put("type", "error").put("name", error.name()).put("value", error.value())
                    .put("traceback", String.join("\n", error.traceback())));
        }
    }
}
