package dev.airlock.server.mcp;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.RunRequest;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.policy.Client;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.wire.LimitChanges;
import dev.airlock.server.wire.LimitField;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What each tool does, in terms of {@link CommandApi} calls. Arguments are checked here (what
 * a JSON schema cannot say); every limit and lifetime rule is the service's.
 */
final class SandboxTools {

    static final int MAX_PLACED_FILES = Command.Run.MAX_FILES;
    static final Set<String> LIMIT_FIELDS = Set.of("memory", "cpus", "pids", "timeoutSeconds", "disk", "outputLimit", "fileSize");

    private final CommandApi service;
    private final FileTools files;
    private final ServerConfig config;
    private final SessionSandboxes sessions;
    private final RunningCalls calls;
    private final String transport;
    private final Client client;

    SandboxTools(CommandApi service, ServerConfig config, SessionSandboxes sessions, RunningCalls calls, String transport, Client client) {
        this.transport = transport;
        this.client = client;
        this.service = service;
        this.files = new FileTools(service);
        this.config = config;
        this.sessions = sessions;
        this.calls = calls;
    }

    /** {@link McpServers#STDIO} or {@link McpServers#HTTP}. */
    /** The file tools, on the same service. */
    FileTools files() {
        return files;
    }

    String transport() {
        return transport;
    }

    CommandApi service() {
        return service;
    }

    /** The client every call of this server is made for. */
    Client client() {
        return client;
    }

    // --- run_code ---

    CallToolResult runCode(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("language", "code", "stdin", "files", "timeoutSeconds"));
        Language language = Language.parse(a.requiredString("language", "\"python\""));
        String code = a.requiredString("code", "\"print('hello')\"");
        if (code.getBytes(StandardCharsets.UTF_8).length > RunRequest.MAX_CODE_BYTES) {
            throw AirlockException.invalid("run_code: code is larger than " + RunRequest.MAX_CODE_BYTES
                    + " bytes: place large parts with 'files' and import them, or split the program");
        }
        String stdin = a.string("stdin");
        Map<String, byte[]> files = new LinkedHashMap<>();
        a.stringMap("files").forEach((path, text) -> files.put(path, text.getBytes(StandardCharsets.UTF_8)));
        Duration timeout = ExecTimeouts.of(a.number("timeoutSeconds", 1, ExecTimeouts.MAX_SECONDS));
        String key = call.callKey();
        if (!calls.start(key)) {
            return ToolResults.exec(cancelled(), List.of(), List.of());
        }
        Command.RunResult run;
        try (OutputRelay relay = new OutputRelay(call, timeout != null ? timeout : profileTimeout())) {
            run = service.execute(call.caller(), new Command.Run(language, code, stdin == null ? null : stdin.getBytes(StandardCharsets.UTF_8),
                    files, timeout, Map.of("airlock.mcp", "run_code"), relay));
        } finally {
            calls.end(key);
            // A cancellation interrupted this thread to end the execution; the thread goes on to other work.
            Thread.interrupted();
        }
        OutputFiles out = OutputFiles.of(run.outputs());
        return ToolResults.exec(run.result(), out.listing, out.content);
    }

    // --- sandboxes ---

    CallToolResult create(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("limits", "ttlSeconds", "labels"));
        Map<String, Object> limitArgs = a.object("limits", LIMIT_FIELDS);
        LimitChanges limits = limits(limitArgs);
        limits.applyTo(Limits.DEFAULTS); // checks the ranges now too
        Double ttlSeconds = a.number("ttlSeconds", 1, config.maxTtl().toSeconds());
        Map<String, String> labels = a.stringMap("labels");
        boolean endsWithSession = ttlSeconds == null;
        Duration ttl = endsWithSession ? null : Duration.ofMillis(Math.round(ttlSeconds * 1000));
        // An explicit lifetime is a promise: the sandbox is not cut short for being idle either.
        Duration idle = endsWithSession ? null : ttl;
        SandboxView s = service.execute(call.caller(), new Command.Create(null, null, limits::applyTo, null, null,
                labels, ttl, idle, null));
        if (endsWithSession) {
            sessions.own(call.session(), s.id());
        }
        return ToolResults.ok(describe(s, endsWithSession));
    }

    CallToolResult list(ToolCall call) {
        call.arguments(Set.of());
        List<Map<String, Object>> list = new ArrayList<>();
        for (SandboxView s : service.execute(call.caller(), new Command.ListSandboxes(Map.of()))) {
            list.add(describe(s, sessions.owns(call.session(), s.id())));
        }
        return ToolResults.ok(Map.of("sandboxes", list));
    }

    CallToolResult destroy(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("sandboxId"));
        String id = a.requiredString("sandboxId", "\"al-...\" (from sandbox_create)");
        service.execute(call.caller(), new Command.Destroy(id));
        sessions.disown(id);
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("sandboxId", id);
        s.put("destroyed", true);
        return ToolResults.ok(s);
    }

    CallToolResult snapshot(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("sandboxId", "memory"));
        String id = a.requiredString("sandboxId", "\"al-...\" (from sandbox_create)");
        Command.SnapshotView s = service.execute(call.caller(), new Command.TakeSnapshot(id, null, a.bool("memory", false)));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("snapshotId", s.id());
        out.put("sandboxId", s.sandbox());
        out.put("files", s.files());
        out.put("bytes", s.bytes());
        out.put("digest", s.digest());
        out.put("expiresAt", s.expiresAt().toString());
        out.put("leftOut", s.leftOut());
        out.put("memory", s.memory());
        return ToolResults.ok(out);
    }

    /** Sandboxes from a snapshot; like those of sandbox_create without a ttl, they end with the session. */
    CallToolResult fork(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("snapshotId", "count"));
        String snapshot = a.requiredString("snapshotId", "\"snap-...\" (from sandbox_snapshot)");
        Double count = a.number("count", 1, Command.Fork.MAX_COUNT);
        if (count != null && count != Math.rint(count)) {
            throw AirlockException.invalid("'count' must be a whole number from 1 to " + Command.Fork.MAX_COUNT);
        }
        List<SandboxView> made = service.execute(call.caller(), new Command.Fork(
                new Command.Create(null, null, null, null, null, null, null, null, null).from(snapshot), count == null ? 1 : count.intValue()));
        List<Map<String, Object>> list = new ArrayList<>();
        for (SandboxView s : made) {
            sessions.own(call.session(), s.id());
            list.add(describe(s, true));
        }
        return ToolResults.ok(Map.of("sandboxes", list));
    }

    // --- executions ---

    CallToolResult exec(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("sandboxId", "command", "language", "code", "stdin", "cwd", "env", "timeoutSeconds"));
        String id = a.requiredString("sandboxId", "\"al-...\" (from sandbox_create)");
        ExecSource source = ExecSource.of(a.command("command"), a.string("language"), a.string("code"));
        String stdin = a.string("stdin");
        Duration timeout = ExecTimeouts.of(a.number("timeoutSeconds", 1, ExecTimeouts.MAX_SECONDS));
        String cwd = a.string("cwd");
        Command.ExecOptions options = new Command.ExecOptions(a.stringMap("env"), cwd == null ? null : resolve(cwd),
                stdin == null ? null : stdin.getBytes(StandardCharsets.UTF_8), timeout);
        String key = call.callKey();
        if (!calls.start(key)) {
            return ToolResults.exec(cancelled(), null, List.of());
        }
        try (OutputRelay relay = new OutputRelay(call, timeout != null ? timeout : profileTimeout())) {
            ExecResult result = service.execute(call.caller(), new Command.Exec(id, source, options, Command.Waiter.listening(relay)));
            return ToolResults.exec(result, null, List.of());
        } finally {
            calls.end(key);
            // A cancellation interrupted this thread to end the execution; the thread goes on to other work.
            Thread.interrupted();
        }
    }

    // --- interpreter ---

    CallToolResult interpreterRun(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("sandboxId", "code", "context", "timeoutSeconds"));
        String id = a.requiredString("sandboxId", "\"al-...\" (from sandbox_create)");
        String code = a.requiredString("code", "\"x = 41\\nx + 1\"");
        Duration timeout = ExecTimeouts.of(a.number("timeoutSeconds", 1, ExecTimeouts.MAX_SECONDS));
        String key = call.callKey();
        if (!calls.start(key)) {
            return ToolResults.error("The call was cancelled before the cell ran.");
        }
        try {
            return ToolResults.cell(service.execute(call.caller(), new Command.RunCell(id, a.string("context"), code, timeout, null)));
        } finally {
            calls.end(key);
            // A cancellation interrupted this thread to interrupt the cell; the thread goes on to other work.
            Thread.interrupted();
        }
    }

    CallToolResult interpreterContext(ToolCall call) {
        ToolArguments a = call.arguments(Set.of("sandboxId", "action", "context"));
        String id = a.requiredString("sandboxId", "\"al-...\" (from sandbox_create)");
        String action = a.requiredString("action", "\"create\", \"list\", \"restart\" or \"delete\"");
        String context = a.string("context");
        if ((action.equals("restart") || action.equals("delete")) && context == null) {
            throw AirlockException.invalid("interpreter_context: '" + action + "' needs 'context', the id of the context (see action 'list')");
        }
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("sandboxId", id);
        switch (action) {
            case "create" -> s.put("context", context(service.execute(call.caller(), new Command.CreateContext(id, null))));
            case "list" -> s.put("contexts", service.execute(call.caller(), new Command.ListContexts(id)).stream().map(SandboxTools::context).toList());
            case "restart" -> s.put("context", context(service.execute(call.caller(), new Command.RestartContext(id, context))));
            case "delete" -> {
                service.execute(call.caller(), new Command.DeleteContext(id, context));
                s.put("deleted", context);
            }
            default -> throw AirlockException.invalid("interpreter_context: action must be create, list, restart or delete, not '"
                    + dev.airlock.core.Printable.of(action) + "'");
        }
        return ToolResults.ok(s);
    }

    private static Map<String, Object> context(Command.InterpreterContextView c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", c.id());
        m.put("language", c.language());
        m.put("state", c.state());
        m.put("cells", c.cells());
        m.put("createdAt", c.createdAt().toString());
        m.put("message", c.message());
        return m;
    }

    /** Which sandboxes belong to which MCP session. */
    SessionSandboxes sessions() {
        return sessions;
    }

    /** The call {@code key} ended, whatever the tool: it can no longer be cancelled. */
    void callEnded(String key) {
        calls.end(key);
    }

    /** The execution timeout of the client's profile (the tools' sandboxes use its first), for a call that names none. */
    private Duration profileTimeout() {
        return service.policy().profile(client.profiles().getFirst()).limits().timeout();
    }

    /** The result of a call cancelled before it started. */
    private static ExecResult cancelled() {
        return new ExecResult(new byte[0], new byte[0], -1, EndReason.CANCELLED, false, Duration.ZERO, "cancelled");
    }

    // --- helpers ---

    /** Relative paths are under /workspace, where programs start. */
    static String resolve(String path) {
        return Command.inWorkspace(path);
    }

    /** The limits the call asked for, checked now, before the profile is known. */
    private static LimitChanges limits(Map<String, Object> l) {
        for (String name : l.keySet()) {
            if (LimitField.named(name).isEmpty()) {
                throw AirlockException.invalid("sandbox_create: unknown limit limits." + name);
            }
        }
        return LimitChanges.read(l::containsKey, f -> {
            String field = "limits." + f.wireName();
            Object v = l.get(f.wireName());
            return f.kind() == LimitField.Kind.SIZE ? size(field, v) : number(field, v);
        });
    }

    private static long size(String field, Object v) {
        if (v instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue())) {
            return n.longValue();
        }
        if (v instanceof String s) {
            return Limits.parseSize(field, s);
        }
        throw AirlockException.invalid("sandbox_create: " + field + " must be a size such as \"256m\" or \"2g\", or a byte count");
    }

    private static double number(String field, Object v) {
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        throw AirlockException.invalid("sandbox_create: " + field + " must be a number");
    }

    private static Map<String, Object> describe(SandboxView s, boolean endsWithSession) {
        Limits l = s.spec().limits();
        Map<String, Object> limits = new LinkedHashMap<>();
        limits.put("memory", Limits.formatBytes(l.memoryBytes()));
        limits.put("cpus", l.cpus());
        limits.put("pids", l.pids());
        limits.put("timeoutSeconds", l.timeout().toMillis() / 1000.0);
        limits.put("disk", Limits.formatBytes(l.diskBytes()));
        limits.put("outputLimit", Limits.formatBytes(l.outputBytes()));
        limits.put("fileSize", Limits.formatBytes(l.fileSizeBytes()));
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sandboxId", s.id());
        m.put("isolation", s.isolation().id());
        m.put("createdAt", s.createdAt().toString());
        m.put("expiresAt", s.expiresAt().toString());
        m.put("idleTimeoutSeconds", s.idleTimeout().toSeconds());
        m.put("endsWithSession", endsWithSession);
        m.put("labels", s.labels());
        m.put("limits", limits);
        return m;
    }

}
