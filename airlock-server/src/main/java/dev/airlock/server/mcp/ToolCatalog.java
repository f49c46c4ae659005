package dev.airlock.server.mcp;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Isolation;
import dev.airlock.server.audit.Audit;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.command.NodeRouting;
import io.modelcontextprotocol.server.McpServerFeatures.AsyncToolSpecification;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Tool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import tools.jackson.core.type.TypeReference;

import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.function.Function;

/**
 * The tools a model sees: names, descriptions written for a model (when to use the tool, its
 * limits, what it does not do), input and output schemas, and the handler behind each. Handlers
 * block, so each call runs on a virtual thread of its own; an interrupt of that thread is how a
 * cancellation reaches the execution.
 */
final class ToolCatalog {

    private static final Logger LOG = LoggerFactory.getLogger(ToolCatalog.class);
    private static final Scheduler CALLS = Schedulers.fromExecutorService(Executors.newVirtualThreadPerTaskExecutor(), "airlock-mcp-call");

    /** What code in a sandbox of {@code p} can use, for the descriptions a model reads. */
    static String facts(Profile p, Isolation isolation) {
        String inputs = p.inputs().isEmpty() ? "" : " Read-only input files are under " + p.inputs().stream()
                .map(dev.airlock.core.Input::sandboxPath).collect(java.util.stream.Collectors.joining(", ")) + ".";
        String image = dev.airlock.core.SandboxSpec.SYSTEM_IMAGE.equals(p.image())
                ? "a read-only system image (python3, node, bash, sh, java and common Unix tools; no package installs)"
                : "the read-only image '" + p.image() + "' (what its packages hold; no package installs)";
        return " The sandbox is " + isolation.description() + ". It has " + network(p) + ", " + image
                + ", and writable /workspace and /tmp." + inputs;
    }

    /** The sandbox's network in a phrase: none, or where its proxy lets it go. */
    static String network(Profile p) {
        if (p.network().isNone()) {
            return "no network access";
        }
        List<String> names = p.network().allow().stream().map(Object::toString).limit(10).toList();
        return "network access only through Airlock's proxy (HTTP_PROXY and HTTPS_PROXY are set) to " + String.join(", ", names)
                + (p.network().allow().size() > names.size() ? " and more" : "") + "; everything else is refused";
    }

    private static final String ENTITY_SCHEMA = """
            {"type": "object", "additionalProperties": true}
            """;

    private ToolCatalog() {
    }

    /** The MCP tool each operation of a policy grants. */
    static final Map<String, Operation> OPERATIONS = Map.ofEntries(
            Map.entry("run_code", Operation.RUN),
            Map.entry("interpreter_run", Operation.EXEC),
            Map.entry("interpreter_context", Operation.EXEC),
            Map.entry("sandbox_create", Operation.SANDBOX_CREATE),
            Map.entry("sandbox_exec", Operation.EXEC),
            Map.entry("sandbox_write_file", Operation.FILES_WRITE),
            Map.entry("sandbox_read_file", Operation.FILES_READ),
            Map.entry("sandbox_list_files", Operation.FILES_READ),
            Map.entry("sandbox_destroy", Operation.SANDBOX_DESTROY),
            Map.entry("sandbox_list", Operation.SANDBOX_READ),
            Map.entry("sandbox_snapshot", Operation.SANDBOX_SNAPSHOT),
            Map.entry("sandbox_fork", Operation.SANDBOX_CREATE));

    /** The tools {@code t}'s client is granted: a client never sees a tool its policy does not grant. */
    static List<AsyncToolSpecification> tools(SandboxTools t, ServerConfig config) {
        Profile p = t.service().policy().profile(t.client().profiles().getFirst());
        return all(t, config, p).stream().filter(s -> t.client().may(OPERATIONS.get(s.tool().name()))).toList();
    }

    private static List<AsyncToolSpecification> all(SandboxTools t, ServerConfig config, Profile profile) {
        String facts = facts(profile, t.service().isolation(profile));
        return List.of(
                tool(t, "run_code", "Run code once",
                        "Runs a program once in a fresh, isolated sandbox and returns its output; the sandbox is destroyed afterwards, so"
                                + " nothing carries over between calls. Use it for calculations, data processing, checking code, or making a"
                                + " chart. Write result files to /workspace/output/: images (PNG, JPEG, GIF, WebP) come back as images and"
                                + " text files as embedded resources (at most 8 files of 1 MiB each). 'files' places input text files first"
                                + " (relative paths are under /workspace). Output is capped at 1 MiB per stream; the run is killed after"
                                + " timeoutSeconds (default " + profile.limits().timeout().toSeconds() + ")." + facts
                                + " For several steps that share files or state, use sandbox_create and sandbox_exec instead.",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "language": {"type": "string", "enum": ["python", "javascript", "bash", "sh", "java"],
                              "description": "python (python3), javascript (node), bash, sh, or java (a single Main.java file with a main method)"},
                            "code": {"type": "string", "description": "The program text"},
                            "stdin": {"type": "string", "description": "Text fed to standard input"},
                            "files": {"type": "object", "additionalProperties": {"type": "string"},
                              "description": "Text files to place before the run: {\\"path\\": \\"content\\"}; relative paths are under /workspace"},
                            "timeoutSeconds": {"type": "number", "minimum": 1, "maximum": 3600, "description": "Wall-clock limit in seconds; default: the profile's, given in the tool description"}
                          },
                          "required": ["language", "code"]
                        }
                        """, ToolResults.EXEC_OUTPUT_SCHEMA, annotations(false, false), t::runCode),
                tool(t, "sandbox_create", "Create a sandbox",
                        "Creates a long-lived, isolated sandbox for work in several steps (write files, run commands, read results) and"
                                + " returns its sandboxId. Without ttlSeconds it is destroyed when this MCP session ends, after "
                                + minutes(config.defaultIdle()) + " without use, or after " + minutes(config.defaultTtl())
                                + " at most; with ttlSeconds it lives exactly that long (up to " + minutes(config.maxTtl())
                                + "), also after the session ends. Files are discarded when the sandbox is destroyed."
                                + facts + " Destroy it with sandbox_destroy when done.",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "limits": {"type": "object", "additionalProperties": false, "description": "Resource limits; each has a default",
                              "properties": {
                                "memory": {"type": ["string", "integer"], "description": "Memory, such as \\"512m\\" (default) or \\"2g\\""},
                                "cpus": {"type": "number", "description": "CPU cores, such as 1 (default) or 0.5"},
                                "pids": {"type": "integer", "description": "Processes and threads at once (default 256)"},
                                "timeoutSeconds": {"type": "number", "description": "Default wall-clock limit of each execution in seconds (default: the profile's)"},
                                "disk": {"type": ["string", "integer"], "description": "Size of /workspace and of /tmp (default \\"128m\\")"},
                                "outputLimit": {"type": ["string", "integer"], "description": "stdout and stderr kept per execution (default \\"1m\\")"},
                                "fileSize": {"type": ["string", "integer"], "description": "Largest file a program may write (default \\"64m\\")"}
                              }},
                            "ttlSeconds": {"type": "number", "minimum": 1, "maximum": 86400,
                              "description": "Explicit lifetime; the sandbox then outlives this session"},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Your own key-value tags"}
                          }
                        }
                        """, ENTITY_SCHEMA, annotations(false, false), t::create),
                tool(t, "sandbox_exec", "Run a command in a sandbox",
                        "Runs a command, or code in a language, inside a sandbox made by sandbox_create and returns its output when it"
                                + " ends. Files and installed state persist between calls in the same sandbox; each call is a new process"
                                + " (no shell state such as cd or variables carries over; use cwd and env). Give 'command' as a shell line"
                                + " (a string, run with sh -c) or as an array of program and arguments, or 'language' with 'code'. Killed after"
                                + " timeoutSeconds (default " + profile.limits().timeout().toSeconds() + "). The sandbox has " + network(profile) + ".",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "sandboxId": {"type": "string", "description": "From sandbox_create"},
                            "command": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
                              "description": "A shell line run with sh -c, such as \\"ls -la | head\\", or program and arguments, such as [\\"python3\\", \\"analyze.py\\"]"},
                            "language": {"type": "string", "enum": ["python", "javascript", "bash", "sh", "java"], "description": "With 'code', instead of 'command'"},
                            "code": {"type": "string", "description": "Program text, with 'language'"},
                            "stdin": {"type": "string", "description": "Text fed to standard input"},
                            "cwd": {"type": "string", "description": "Working directory; default /workspace"},
                            "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables"},
                            "timeoutSeconds": {"type": "number", "minimum": 1, "maximum": 3600, "description": "Wall-clock limit in seconds; default: the profile's, given in the tool description"}
                          },
                          "required": ["sandboxId"]
                        }
                        """, ToolResults.EXEC_OUTPUT_SCHEMA, annotations(false, false), t::exec),
                tool(t, "interpreter_run", "Run Python in a persistent interpreter",
                        "Runs Python code as one cell of a persistent interpreter (an IPython/Jupyter kernel) in a sandbox made by"
                                + " sandbox_create, and returns what it printed, the value of its last expression, and its charts and"
                                + " tables. State persists: variables, imports, functions and files of earlier calls in the same context"
                                + " are still there, as in a notebook, so load data once and explore it step by step. Charts: draw with"
                                + " matplotlib (import matplotlib.pyplot as plt; plt.plot(...)); every figure the cell creates comes back"
                                + " as an image, with no plt.show() or savefig needed (its pixel size is figsize x dpi, 640x480 by default)."
                                + " Tables: a pandas DataFrame as the last expression comes back as a text table; display(x) shows more"
                                + " than one thing. numpy, pandas and matplotlib are there when the sandbox's image has them: the profile's"
                                + " image decides (the built-in image python-data, which an operator builds with 'airlock image build"
                                + " python-data', has them and scipy; the default image has them only if the host installed them). Without 'context' the sandbox's first context is used (made"
                                + " on first use); interpreter_context makes more, restarts or deletes them. A cell running past"
                                + " timeoutSeconds (default " + profile.limits().timeout().toSeconds() + ") is interrupted with"
                                + " KeyboardInterrupt and the context keeps its state. The sandbox has " + network(profile) + ".",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "sandboxId": {"type": "string", "description": "From sandbox_create"},
                            "code": {"type": "string", "description": "Python code, one or more lines, such as df.describe()"},
                            "context": {"type": "string", "description": "A context id from interpreter_context; default: the sandbox's first"},
                            "timeoutSeconds": {"type": "number", "minimum": 1, "maximum": 3600, "description": "Wall-clock limit of this cell in seconds; default: the profile's, given in the tool description"}
                          },
                          "required": ["sandboxId", "code"]
                        }
                        """, ENTITY_SCHEMA, annotations(false, false), t::interpreterRun),
                tool(t, "interpreter_context", "Manage interpreter contexts",
                        "Creates, lists, restarts or deletes the persistent Python interpreter contexts of a sandbox (each an"
                                + " IPython kernel with its own variables; interpreter_run runs code in them). 'create' starts a new one and"
                                + " returns its id; 'list' shows them and whether each is ready, busy or dead; 'restart' gives a context a"
                                + " fresh kernel (its variables are lost; files in the sandbox stay), the way out of a dead kernel;"
                                + " 'delete' ends one. A sandbox holds at most 4.",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "sandboxId": {"type": "string", "description": "From sandbox_create"},
                            "action": {"type": "string", "enum": ["create", "list", "restart", "delete"]},
                            "context": {"type": "string", "description": "The context to restart or delete"}
                          },
                          "required": ["sandboxId", "action"]
                        }
                        """, ENTITY_SCHEMA, annotations(false, false), t::interpreterContext),
                tool(t, "sandbox_write_file", "Write a file into a sandbox",
                        "Creates or replaces a file inside a sandbox (parent directories are created). Give text as 'content' or"
                                + " binary as 'contentBase64' (at most 8 MiB per call). Relative paths are under /workspace.",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "sandboxId": {"type": "string"},
                            "path": {"type": "string", "description": "Such as data/input.csv or /workspace/data/input.csv"},
                            "content": {"type": "string", "description": "Text content (UTF-8)"},
                            "contentBase64": {"type": "string", "description": "Binary content, base64-encoded"}
                          },
                          "required": ["sandboxId", "path"]
                        }
                        """, ENTITY_SCHEMA, annotations(false, false), t.files()::writeFile),
                tool(t, "sandbox_read_file", "Read a file from a sandbox",
                        "Returns a file's content from a sandbox: as text if it is UTF-8, else base64 (images also come back as"
                                + " images). At most 1 MiB: read parts of larger files with sandbox_exec (head, tail, split).",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "sandboxId": {"type": "string"},
                            "path": {"type": "string", "description": "Relative paths are under /workspace"}
                          },
                          "required": ["sandboxId", "path"]
                        }
                        """, ENTITY_SCHEMA, annotations(true, false), t.files()::readFile),
                tool(t, "sandbox_list_files", "List files in a sandbox",
                        "Lists one directory of a sandbox (not recursive; at most 1000 entries) with each entry's type, size and time."
                                + " Default: /workspace.",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "sandboxId": {"type": "string"},
                            "path": {"type": "string", "description": "Directory; default /workspace"}
                          },
                          "required": ["sandboxId"]
                        }
                        """, ENTITY_SCHEMA, annotations(true, false), t.files()::listFiles),
                tool(t, "sandbox_destroy", "Destroy a sandbox",
                        "Destroys a sandbox: kills every process in it and discards all of its files. It cannot be undone.",
                        """
                        {
                          "type": "object",
                          "properties": {"sandboxId": {"type": "string"}},
                          "required": ["sandboxId"]
                        }
                        """, ENTITY_SCHEMA, annotations(false, true), t::destroy),
                tool(t, "sandbox_snapshot", "Snapshot a sandbox's files",
                        "Saves the files of a sandbox's /workspace and /tmp (contents and modes, not its running processes) as a"
                                + " snapshot, kept for a day. Take one before a risky step to come back to it, or to try several"
                                + " approaches in parallel: sandbox_fork makes new sandboxes that start with exactly these files."
                                + " With memory: true (gVisor sandboxes, and microVM sandboxes of a stored image) the running processes are kept too, with their memory,"
                                + " and start again in every fork; not while a command is running.",
                        """
                        {
                          "type": "object",
                          "properties": {"sandboxId": {"type": "string"}, "memory": {"type": "boolean"}},
                          "required": ["sandboxId"]
                        }
                        """, ENTITY_SCHEMA, annotations(false, false), t::snapshot),
                tool(t, "sandbox_fork", "New sandboxes from a snapshot",
                        "Creates 1 to 16 new sandboxes that start with the files of a snapshot from sandbox_snapshot (a restore for"
                                + " count 1). Each is independent: what one writes, the others and the original never see. Use"
                                + " sandbox_exec in each; they end with this session (or destroy them with sandbox_destroy).",
                        """
                        {
                          "type": "object",
                          "properties": {
                            "snapshotId": {"type": "string"},
                            "count": {"type": "integer", "minimum": 1, "maximum": 16, "description": "How many sandboxes (default 1)"}
                          },
                          "required": ["snapshotId"]
                        }
                        """, ENTITY_SCHEMA, annotations(false, false), t::fork),
                tool(t, "sandbox_list", "List sandboxes",
                        "Lists the live sandboxes with their ids, lifetimes, limits and labels, and whether each ends with this session.",
                        """
                        {"type": "object", "properties": {}}
                        """, ENTITY_SCHEMA, annotations(true, false), t::list));
    }

    private static String minutes(java.time.Duration d) {
        return d.toHours() >= 1 && d.toMinutes() % 60 == 0 ? d.toHours() + " hours" : d.toMinutes() + " minutes";
    }

    private static McpSchema.ToolAnnotations annotations(boolean readOnly, boolean destructive) {
        return new McpSchema.ToolAnnotations(null, readOnly, destructive, false, false, null);
    }

    private static AsyncToolSpecification tool(SandboxTools t, String name, String title, String description, String inputSchema,
                                               String outputSchema, McpSchema.ToolAnnotations annotations,
                                               Function<ToolCall, CallToolResult> handler) {
        Tool tool = Tool.builder()
                .name(name)
                .title(title)
                .description(description)
                .inputSchema(schema(inputSchema))
                .outputSchema(schema(outputSchema))
                .annotations(annotations)
                .build();
        return AsyncToolSpecification.builder()
                .tool(tool)
                .callHandler((exchange, request) -> Mono.fromCallable(() -> invoke(t, handler, exchange != null ? new ToolCall(exchange, request)
                                : new ToolCall(request, (String) request.meta().get(FORWARDED_SESSION))))
                        .subscribeOn(CALLS))
                .build();
    }

    /** The request meta of a call another node sent on: the session it came in there, {@code <node>/<session>}. */
    static final String FORWARDED_SESSION = "airlock/forwardedSession";

    /**
     * A call on a sandbox another node of the cluster holds: sent to that node, whose MCP tools
     * authorize, record and run it as this door would (docs/cluster.md, "Between nodes"); its
     * result comes back whole (no output or progress notifications while it runs, and a cancel
     * here does not reach it).
     */
    private static CallToolResult forward(NodeRouting routing, NodeRouting.Peer owner, SandboxTools t, ToolCall call, String via,
                                          Map<String, Object> args) {
        Map<String, Object> sent = new java.util.LinkedHashMap<>();
        sent.put("name", call.tool());
        sent.put("arguments", args);
        sent.put("session", call.session());
        try {
            byte[] answer = routing.callTool(owner, t.client().name(), via, McpServers.JSON.writeValueAsBytes(sent), null);
            return McpServers.JSON.readValue(answer, CallToolResult.class);
        } catch (java.io.IOException e) {
            throw new AirlockException(AirlockException.Kind.INTERNAL, "node '" + owner.name() + "' answered tool call " + call.tool()
                    + " with what is not a tool's result: " + e.getMessage(), e);
        }
    }

    /** The tools that make sandboxes without naming one: on a node of a cluster, carried out where placement (or the snapshot) says. */
    private static final java.util.Set<String> PLACED = java.util.Set.of("sandbox_create", "run_code", "sandbox_fork");

    /**
     * A call that makes sandboxes, on a node of a cluster: {@code sandbox_create} and {@code
     * run_code} go to the node placement chooses for the client's profile's tier (as a REST create
     * does), {@code sandbox_fork} to the node that holds the snapshot; the sandboxes a create or fork
     * made there still end with this session (that node is told when it ends). Null when this node
     * is the one, or when the node chosen for a create could not be reached (this node makes it).
     */
    private static CallToolResult placed(NodeRouting routing, SandboxTools t, ToolCall call, String via, Map<String, Object> args) {
        NodeRouting.Peer to;
        try {
            if (call.tool().equals("sandbox_fork")) {
                to = args != null && args.get("snapshotId") instanceof String snapshot ? routing.forkPlace(snapshot, t.client().name()) : null;
            } else {
                var profile = t.client().profiles().isEmpty() ? null : t.service().policy().profiles().get(t.client().profiles().getFirst());
                to = profile == null ? null : routing.place(profile.isolation() == null ? null : profile.isolation().id());
            }
        } catch (AirlockException e) {
            t.callEnded(call.callKey());
            return ToolResults.refused(e);   // the snapshot's node is down
        }
        if (to == null) {
            return null;
        }
        try {
            CallToolResult result = forward(routing, to, t, call, via, args);
            if (!call.tool().equals("run_code") && !Boolean.TRUE.equals(result.isError())) {
                t.sessions().ownElsewhere(call.session(), to.name());
            }
            t.callEnded(call.callKey());
            return result;
        } catch (NodeRouting.Unreached e) {
            if (call.tool().equals("sandbox_fork")) {
                t.callEnded(call.callKey());
                return ToolResults.refused(e);
            }
            LOG.info("{} placed on node '{}' is made here: {}", call.tool(), to.name(), e.getMessage());
            return null;
        } catch (AirlockException e) {
            t.callEnded(call.callKey());
            return ToolResults.refused(e);
        }
    }

    /**
     * {@code sandbox_list} on a node of a cluster: this node's sandboxes with every other serving
     * node's (asked at once, the same call sent on, each within {@link NodeRouting#ASK}), each named
     * with its node, and the sandboxes of nodes that are down as {@code lost}; {@code partial} says
     * which nodes did not answer.
     */
    @SuppressWarnings("unchecked")
    private static CallToolResult joined(NodeRouting routing, SandboxTools t, ToolCall call, String via, CallToolResult local) {
        List<Map<String, Object>> all = new java.util.ArrayList<>();
        for (Map<String, Object> s : (List<Map<String, Object>>) ((Map<String, Object>) local.structuredContent()).get("sandboxes")) {
            Map<String, Object> named = new java.util.LinkedHashMap<>(s);
            named.put("node", routing.nodeName());
            all.add(named);
        }
        List<String> missing = new java.util.ArrayList<>();
        try (var asks = Executors.newVirtualThreadPerTaskExecutor()) {
            Map<NodeRouting.Peer, java.util.concurrent.Future<CallToolResult>> answers = new java.util.LinkedHashMap<>();
            byte[] sent = McpServers.JSON.writeValueAsBytes(Map.of("name", call.tool(), "arguments", Map.of(), "session", call.session()));
            for (NodeRouting.Peer peer : routing.others()) {
                answers.put(peer, asks.submit(() -> McpServers.JSON.readValue(routing.callTool(peer, t.client().name(), via, sent, NodeRouting.ASK),
                        CallToolResult.class)));
            }
            for (var a : answers.entrySet()) {
                try {
                    CallToolResult r = a.getValue().get();
                    if (Boolean.TRUE.equals(r.isError()) || !(r.structuredContent() instanceof Map<?, ?> m) || !(m.get("sandboxes") instanceof List<?> items)) {
                        missing.add("node " + a.getKey().name());
                        continue;
                    }
                    for (Object item : items) {
                        Map<String, Object> named = new java.util.LinkedHashMap<>((Map<String, Object>) item);
                        named.put("node", a.getKey().name());
                        all.add(named);
                    }
                } catch (java.util.concurrent.ExecutionException e) {
                    missing.add("node " + a.getKey().name());
                }
            }
        } catch (AirlockException | java.io.IOException e) {
            missing.add("the other nodes (the cluster's database does not answer)");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while asking the cluster's other nodes");
        }
        for (NodeRouting.Lost lost : routing.lost(t.client().name())) {
            Map<String, Object> m = new java.util.LinkedHashMap<>();
            m.put("sandboxId", lost.sandbox());
            m.put("node", lost.node());
            m.put("state", "lost");
            m.put("message", lost.message());
            all.add(m);
        }
        Map<String, Object> out = new java.util.LinkedHashMap<>();
        out.put("sandboxes", all);
        if (!missing.isEmpty()) {
            out.put("partial", NodeRouting.partial(missing));
        }
        return ToolResults.ok(out);
    }

    /**
     * Runs a call another node's MCP door sent on ({@code name}, {@code arguments}, {@code session})
     * with {@code granted}, the client's tools ({@link #tools}), as {@code node}'s session; a tool the
     * client is not granted is refused as an unknown one.
     */
    static CallToolResult forwarded(List<AsyncToolSpecification> granted, String node, Map<String, Object> call) {
        Object name = call.get("name");
        Object session = call.get("session");
        @SuppressWarnings("unchecked")
        Map<String, Object> args = call.get("arguments") instanceof Map<?, ?> m ? (Map<String, Object>) m : Map.of();
        for (AsyncToolSpecification spec : granted) {
            if (spec.tool().name().equals(name)) {
                McpSchema.CallToolRequest request = McpSchema.CallToolRequest.builder().name((String) name).arguments(args)
                        .meta(Map.of(FORWARDED_SESSION, SessionSandboxes.remote(node, String.valueOf(session)))).build();
                return spec.callHandler().apply(null, request).block();
            }
        }
        return ToolResults.error("Unknown tool: " + dev.airlock.core.Printable.of(String.valueOf(name), 100));
    }

    private static Map<String, Object> schema(String json) {
        return ToolResults.JSON.readValue(json, new TypeReference<Map<String, Object>>() { });
    }

    /**
     * Runs a call once the service authorized it for the client (which records the request, its
     * arguments only as a digest since they hold code and files, and the decision), as the caller
     * {@code <client>@mcp-stdio} or {@code <client>@mcp-http:<session>}.
     */
    private static CallToolResult invoke(SandboxTools t, Function<ToolCall, CallToolResult> handler, ToolCall call) {
        boolean http = t.transport().equals(McpServers.HTTP);
        String via = http ? McpServers.HTTP + ":" + call.session() : McpServers.STDIO;
        Map<String, Object> args = call.rawArguments();
        String sandbox = args != null && args.get("sandboxId") instanceof String id ? id : null;
        NodeRouting routing = t.service().routing();
        if (routing != null && sandbox != null && !call.forwarded()) {
            NodeRouting.Peer owner;
            try {
                owner = routing.ownerOf(sandbox, t.client().name());
            } catch (AirlockException e) {
                t.callEnded(call.callKey());
                return ToolResults.refused(e);   // lost with its node
            }
            if (owner != null) {
                try {
                    return forward(routing, owner, t, call, via, args);
                } catch (AirlockException e) {
                    return ToolResults.refused(e);
                } finally {
                    t.callEnded(call.callKey());
                }
            }
        }
        if (routing != null && sandbox == null && !call.forwarded() && PLACED.contains(call.tool())) {
            CallToolResult made = placed(routing, t, call, via, args);
            if (made != null) {
                return made;
            }
        }
        String digest = Audit.digest(ToolResults.JSON.writeValueAsString(args == null ? Map.of() : new java.util.TreeMap<>(args)));
        CommandApi.Request request = new CommandApi.Request(t.client(), via, t.transport(), call.tool(),
                OPERATIONS.get(call.tool()), sandbox, digest,
                t.service().policy().elicitation() ? call.elicitation() : null, null);
        try {
            call.authorizedAs(t.service().authorize(request));
            CallToolResult result = handler.apply(call);
            return routing != null && !call.forwarded() && call.tool().equals("sandbox_list") && !Boolean.TRUE.equals(result.isError())
                    ? joined(routing, t, call, via, result) : result;
        } catch (AirlockException e) {
            if (e.kind() == AirlockException.Kind.INTERNAL) {
                LOG.warn("tool {} failed: {}", call.tool(), e.getMessage(), e);
            }
            return ToolResults.refused(e);
        } catch (RuntimeException e) {
            LOG.error("tool {} failed", call.tool(), e);
            return ToolResults.error("Internal error in Airlock (not caused by your input): " + e);
        } finally {
            t.callEnded(call.callKey()); // every call was tracked when seen, so a cancel could find it
        }
    }
}
