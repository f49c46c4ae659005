package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Printable;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.http.ClientDisconnects;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.http.LocalOrigin;
import dev.airlock.server.output.ProcessOutputFiles;
import dev.airlock.server.output.SpilledOutput;
import dev.airlock.server.wire.Json;
import dev.airlock.server.wire.NetworkJson;
import org.eclipse.jetty.ee10.websocket.server.JettyWebSocketServerContainer;
import org.eclipse.jetty.websocket.api.Session;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.airlock.server.policy.Operation.APPROVALS;
import static dev.airlock.server.policy.Operation.AUDIT;
import static dev.airlock.server.policy.Operation.CLUSTER_DRAIN;
import static dev.airlock.server.policy.Operation.CLUSTER_READ;
import static dev.airlock.server.policy.Operation.EXEC;
import static dev.airlock.server.policy.Operation.FILES_READ;
import static dev.airlock.server.policy.Operation.FILES_WRITE;
import static dev.airlock.server.policy.Operation.METRICS;
import static dev.airlock.server.policy.Operation.NETWORK_UPDATE;
import static dev.airlock.server.policy.Operation.OUTPUTS;
import static dev.airlock.server.policy.Operation.RUN;
import static dev.airlock.server.policy.Operation.SANDBOX_CREATE;
import static dev.airlock.server.policy.Operation.SANDBOX_DESTROY;
import static dev.airlock.server.policy.Operation.SANDBOX_EXTEND;
import static dev.airlock.server.policy.Operation.SANDBOX_PAUSE;
import static dev.airlock.server.policy.Operation.SANDBOX_READ;
import static dev.airlock.server.policy.Operation.SANDBOX_SNAPSHOT;

/**
 * The REST API (docs/rest-api.md) as one table: each route names its method, path, operation and
 * the handler that reads the request into a command and writes the answer. Handlers hold no rule:
 * every check is a control of the service.
 */
final class RestApi {

    private static final String SANDBOX = "/v1/sandboxes/{id}";
    private static final String PROCESS = SANDBOX + "/processes/{pid}";
    private static final String CONTEXT = SANDBOX + "/contexts/{context}";
    private static final Set<String> FORK_FIELDS = java.util.stream.Stream.concat(RestCommands.CREATE_FIELDS.stream(), java.util.stream.Stream.of("count"))
            .collect(java.util.stream.Collectors.toUnmodifiableSet());

    private final RestCommands commands;
    private final CommandApi service;
    private final PreviewRoutes previews;
    private final WaitedExecutions executions;
    /** The address the server listens on: a terminal's WebSocket must name it, or a loopback name, as its Host. */
    private final String bindHost;
    private final List<RestRoute> routes;

    RestApi(RestCommands commands, ClientDisconnects disconnects, CommandApi service, byte[] openApi, ApprovalEvents approvalEvents,
            String bindHost) {
        this.commands = commands;
        this.bindHost = bindHost;
        this.executions = new WaitedExecutions(disconnects);
        this.service = service;
        this.previews = new PreviewRoutes(service);
        List<RestRoute> table = new java.util.ArrayList<>(List.of(
                new RestRoute("GET", "/health", null, c -> c.send(200, health())),
                new RestRoute("GET", "/openapi.json", null, c -> {
                    c.resp.setStatus(200);
                    c.resp.setContentType("application/json");
                    c.resp.getOutputStream().write(openApi);
                }),
                new RestRoute("GET", "/metrics", METRICS, c -> {
                    c.resp.setStatus(200);
                    c.resp.setContentType("text/plain; version=0.0.4; charset=utf-8");
                    c.resp.getOutputStream().write(c.execute(new Command.Metrics()).getBytes(StandardCharsets.UTF_8));
                }),
                new RestRoute("GET", "/v1/metrics/history", METRICS, c -> c.send(200, JsonViews.metricsHistory(c.execute(new Command.MetricsHistory())))),
                new RestRoute("POST", "/v1/run", RUN, executions::run),
                new RestRoute("GET", "/v1/sandboxes", SANDBOX_READ, this::list),
                new RestRoute("GET", "/v1/images", SANDBOX_READ, c -> c.send(200, Json.images(c.execute(new Command.ListImages())))),
                new RestRoute("POST", "/v1/sandboxes", SANDBOX_CREATE,
                        c -> c.send(201, JsonViews.sandbox(c.execute(commands.create(c.json(RestCommands.CREATE_FIELDS)))))),
                new RestRoute("DELETE", SANDBOX, SANDBOX_DESTROY, c -> {
                    c.execute(new Command.Destroy(c.param("id")));
                    c.noContent();
                }),
                new RestRoute("GET", SANDBOX + "/network", SANDBOX_READ,
                        c -> c.send(200, NetworkJson.write(c.execute(new Command.Describe(c.param("id"))).network()))),
                new RestRoute("PUT", SANDBOX + "/network", NETWORK_UPDATE, c -> {
                    var network = NetworkJson.parse(c.json(NetworkJson.FIELDS));
                    c.send(200, NetworkJson.write(c.execute(new Command.UpdateNetwork(c.param("id"), network)).network()));
                }),
                new RestRoute("POST", SANDBOX + "/ttl", SANDBOX_EXTEND, c -> {
                    JsonNode body = c.json(Set.of("ttlSeconds"));
                    c.send(200, JsonViews.sandbox(c.execute(new Command.ExtendTtl(c.param("id"), commands.ttl(Json.number(body, "ttlSeconds")))), c.caller()));
                }),
                new RestRoute("POST", SANDBOX + "/pause", SANDBOX_PAUSE, c -> {
                    JsonNode body = c.json(Set.of("toDisk"));
                    if (body.has("toDisk") && !body.get("toDisk").isBoolean()) {
                        throw AirlockException.invalid("'toDisk' must be true or false");
                    }
                    c.send(200, JsonViews.sandbox(c.execute(new Command.Pause(c.param("id"), body.path("toDisk").asBoolean(false)))));
                }),
                new RestRoute("POST", SANDBOX + "/resume", SANDBOX_PAUSE, c -> c.send(200, JsonViews.sandbox(c.execute(new Command.Resume(c.param("id")))))),
                new RestRoute("POST", SANDBOX + "/snapshots", SANDBOX_SNAPSHOT, c -> {
                    JsonNode body = c.json(Set.of("ttlSeconds", "memory"));
                    Double ttl = body.has("ttlSeconds") ? Json.number(body, "ttlSeconds") : null;
                    if (body.has("memory") && !body.get("memory").isBoolean()) {
                        throw AirlockException.invalid("'memory' must be true or false");
                    }
                    c.send(201, JsonViews.snapshot(c.execute(new Command.TakeSnapshot(c.param("id"),
                            ttl == null ? null : Duration.ofMillis(Math.round(Math.min(ttl, 1e12) * 1000)),
                            body.path("memory").asBoolean(false)))));
                }),
                new RestRoute("GET", "/v1/snapshots", SANDBOX_SNAPSHOT, c -> {
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    c.execute(new Command.ListSnapshots()).forEach(s -> list.add(JsonViews.snapshot(s)));
                    c.send(200, Json.object().set("snapshots", list));
                }),
                new RestRoute("GET", "/v1/snapshots/{snapshot}", SANDBOX_SNAPSHOT,
                        c -> c.send(200, JsonViews.snapshot(c.execute(new Command.DescribeSnapshot(c.param("snapshot")))))),
                new RestRoute("DELETE", "/v1/snapshots/{snapshot}", SANDBOX_SNAPSHOT, c -> {
                    c.execute(new Command.DeleteSnapshot(c.param("snapshot")));
                    c.noContent();
                }),
                new RestRoute("POST", "/v1/snapshots/{snapshot}/fork", SANDBOX_CREATE, this::fork),
                new RestRoute("GET", "/v1/snapshots/{snapshot}/archive", SANDBOX_SNAPSHOT, c -> {
                    // nothing is written before every file was checked: an altered snapshot is a 409, not a half-sent tar
                    c.resp.setContentType("application/x-tar");
                    c.resp.setHeader("Content-Disposition", "attachment; filename=\"" + c.param("snapshot") + ".tar\"");
                    c.execute(new Command.ReadSnapshotArchive(c.param("snapshot"), c.resp.getOutputStream()));
                }),
                new RestRoute("POST", SANDBOX + "/exec", EXEC, executions::exec),
                // one process comes with the head of its output: the owner's, as its stdout and stderr are
                new RestRoute("GET", PROCESS, SANDBOX_READ,
                        c -> c.send(200, JsonViews.process(c.execute(new Command.ProcessOutput(c.param("id"), c.param("pid")))))),
                new RestRoute("DELETE", PROCESS, EXEC, c -> {
                    c.execute(new Command.Signal(c.param("id"), c.param("pid"), 9));
                    c.noContent();
                }),
                new RestRoute("GET", PROCESS + "/stdout", SANDBOX_READ, c -> processOutput(c, true)),
                new RestRoute("GET", PROCESS + "/stderr", SANDBOX_READ, c -> processOutput(c, false)),
                new RestRoute("GET", PROCESS + "/attach", EXEC, this::attach),
                new RestRoute("POST", PROCESS + "/signal", EXEC, c -> {
                    c.execute(new Command.Describe(c.param("id"))).process(c.param("pid")); // a missing process is a 404 before the body is judged
                    int signal = RestCall.signal(c.json(Set.of("signal")));
                    c.send(202, JsonViews.process(c.execute(new Command.Signal(c.param("id"), c.param("pid"), signal))));
                }),
                new RestRoute("GET", SANDBOX + "/contexts", SANDBOX_READ, c -> {
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    c.execute(new Command.ListContexts(c.param("id"))).forEach(x -> list.add(JsonViews.context(x)));
                    c.send(200, Json.object().set("contexts", list));
                }),
                new RestRoute("POST", SANDBOX + "/contexts", EXEC, c -> {
                    JsonNode body = c.json(Set.of("language"));
                    String language = Json.string(body, "language");
                    c.send(201, JsonViews.context(c.execute(new Command.CreateContext(c.param("id"),
                            language == null ? null : dev.airlock.core.Language.parse(language)))));
                }),
                new RestRoute("POST", CONTEXT + "/run", EXEC, executions::runCell),
                new RestRoute("POST", CONTEXT + "/restart", EXEC,
                        c -> c.send(200, JsonViews.context(c.execute(new Command.RestartContext(c.param("id"), c.param("context")))))),
                new RestRoute("DELETE", CONTEXT, EXEC, c -> {
                    c.execute(new Command.DeleteContext(c.param("id"), c.param("context")));
                    c.noContent();
                }),
                new RestRoute("PUT", SANDBOX + "/files", FILES_WRITE, Uploads::upload),
                new RestRoute("GET", SANDBOX + "/files", FILES_READ, c -> {
                    // Stat first, so that a missing file is a 404 and not a half-sent body.
                    c.execute(new Command.Stat(c.param("id"), c.first("path")));
                    c.octets();
                    c.execute(new Command.ReadFile(c.param("id"), c.first("path"), c.resp.getOutputStream()));
                }),
                new RestRoute("DELETE", SANDBOX + "/files", FILES_WRITE, c -> {
                    c.execute(new Command.Remove(c.param("id"), c.first("path"), c.query("recursive").contains("true")));
                    c.noContent();
                }),
                new RestRoute("GET", SANDBOX + "/files/stat", FILES_READ,
                        c -> c.send(200, Json.file(c.execute(new Command.Stat(c.param("id"), c.first("path")))))),
                new RestRoute("GET", SANDBOX + "/files/list", FILES_READ, c -> {
                    ArrayNode entries = Json.MAPPER.createArrayNode();
                    c.execute(new Command.ListFiles(c.param("id"), c.first("path"))).forEach(f -> entries.add(Json.file(f)));
                    c.send(200, Json.object().set("entries", entries));
                }),
                new RestRoute("POST", SANDBOX + "/files/mkdir", FILES_WRITE, c -> {
                    JsonNode body = c.json(Set.of("path", "parents"));
                    c.send(201, Json.file(c.execute(new Command.Mkdir(c.param("id"), Json.string(body, "path"), Json.bool(body, "parents")))));
                }),
                new RestRoute("POST", SANDBOX + "/files/rename", FILES_WRITE, c -> {
                    JsonNode body = c.json(Set.of("from", "to"));
                    c.send(200, Json.file(c.execute(new Command.Rename(c.param("id"), Json.string(body, "from"), Json.string(body, "to")))));
                }),
                new RestRoute("GET", "/v1/approvals", APPROVALS, c -> {
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    c.execute(new Command.ListApprovals()).forEach(a -> list.add(JsonViews.approval(a)));
                    c.send(200, Json.object().set("approvals", list));
                }),
                new RestRoute("GET", "/v1/approvals/events", APPROVALS, c -> {
                    c.resp.setStatus(200);
                    c.resp.setContentType("text/event-stream; charset=utf-8");
                    approvalEvents.stream(c.caller().client().name(), c.resp.getOutputStream(), () -> {
                        ArrayNode list = Json.MAPPER.createArrayNode();
                        c.execute(new Command.ListApprovals()).forEach(a -> list.add(JsonViews.approval(a)));
                        return Json.MAPPER.writeValueAsBytes(Json.object().set("approvals", list));
                    });
                }),
                new RestRoute("GET", "/v1/approvals/{id}", APPROVALS, c -> c.send(200, JsonViews.approval(c.execute(new Command.DescribeApproval(c.param("id")))))),
                new RestRoute("POST", "/v1/approvals/{id}/approve", APPROVALS, c -> decide(c, true)),
                new RestRoute("POST", "/v1/approvals/{id}/deny", APPROVALS, c -> decide(c, false)),
                new RestRoute("GET", "/v1/cluster/nodes", CLUSTER_READ, c -> {
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    c.execute(new Command.ListNodes()).forEach(n -> list.add(JsonViews.node(n)));
                    c.send(200, Json.object().set("nodes", list));
                }),
                new RestRoute("POST", "/v1/cluster/nodes/{node}/drain", CLUSTER_DRAIN, c -> {
                    JsonNode body = c.json(Set.of("draining"));
                    boolean draining = !body.has("draining") || body.get("draining").isNull() || Json.bool(body, "draining");
                    c.send(200, JsonViews.node(c.execute(new Command.DrainNode(c.param("node"), draining))));
                }),
                new RestRoute("GET", "/v1/audit", AUDIT, this::audit),
                new RestRoute("GET", "/v1/audit/verify", AUDIT, c -> {
                    var v = c.execute(new Command.VerifyAudit());
                    c.send(200, Json.object().put("ok", v.ok()).put("records", v.records()).put("brokenSeq", v.brokenSeq())
                            .put("problem", v.problem()).put("fromSeq", v.fromSeq()).put("pruned", v.pruned()));
                }),
                new RestRoute("GET", "/v1/outputs", OUTPUTS, c -> {
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    c.execute(new Command.ListOutputs()).forEach(list::add);
                    c.send(200, Json.object().set("outputs", list));
                }),
                new RestRoute("GET", "/v1/outputs/{id}", OUTPUTS, c -> c.send(200, (ObjectNode) c.execute(new Command.DescribeOutputs(c.param("id"))))),
                new RestRoute("DELETE", "/v1/outputs/{id}", OUTPUTS, c -> {
                    c.execute(new Command.DeleteOutputs(c.param("id")));
                    c.noContent();
                }),
                new RestRoute("GET", "/v1/outputs/{id}/files", OUTPUTS, c -> {
                    c.execute(new Command.DescribeOutputs(c.param("id"))); // a missing output is a 404, not a half-sent body
                    c.octets();
                    String path = c.first("path");
                    c.execute(new Command.ReadOutput(c.param("id"), path == null ? "" : path, c.resp.getOutputStream()));
                })));
        table.addAll(SandboxReads.routes());
        table.addAll(previews.routes());
        this.routes = List.copyOf(table);
    }

    /** Ends the preview streams still open. */
    void close() {
        previews.close();
    }

    /** Every route, in the order they are matched. */
    List<RestRoute> routes() {
        return routes;
    }

    private void list(RestCall c) throws IOException {
        Map<String, String> filter = new LinkedHashMap<>();
        for (String label : c.query("label")) {
            int eq = label.indexOf('=');
            if (eq <= 0) {
                throw AirlockException.invalid("label filter '" + Printable.of(label) + "' is not key=value");
            }
            filter.put(label.substring(0, eq), label.substring(eq + 1));
        }
        ArrayNode list = Json.MAPPER.createArrayNode();
        c.execute(new Command.ListSandboxes(filter)).forEach(s -> list.add(JsonViews.sandbox(s, c.caller())));
        c.send(200, Json.object().set("sandboxes", list));
    }

    /** Query {@code limit}: {@code absent} when not given, else a whole number from 1 to {@code max}. */
    static int limit(String l, int absent, int max) {
        if (l == null) {
            return absent;
        }
        int limit;
        try {
            limit = Integer.parseInt(l);
        } catch (NumberFormatException e) {
            limit = -1;
        }
        if (limit < 1 || limit > max) {
            throw AirlockException.invalid("query 'limit' must be a whole number from 1 to " + max);
        }
        return limit;
    }

    /** The audit log's records, filtered; {@code format=jsonl} downloads them as JSON lines. */
    private void audit(RestCall c) throws IOException {
        int limit = limit(c.first("limit"), Command.ReadAudit.DEFAULT_LIMIT, Command.ReadAudit.MAX_LIMIT);
        String before = blank(c.first("before"));
        if (before != null && !before.matches("[1-9][0-9]{0,17}")) {
            throw AirlockException.invalid("query 'before' must be a record's seq (a positive whole number), such as the 'next' of the"
                    + " page shown, not '" + Printable.of(before, 40) + "'");
        }
        String text = c.first("q") == null || c.first("q").isEmpty() ? null : c.first("q");
        if (text != null && text.length() > Command.ReadAudit.MAX_TEXT) {
            throw AirlockException.invalid("query 'q' is " + text.length() + " characters: search for at most " + Command.ReadAudit.MAX_TEXT);
        }
        var records = c.execute(new Command.ReadAudit(blank(c.first("sandbox")), blank(c.first("client")), blank(c.first("kind")),
                instant(c.first("since"), "since"), instant(c.first("until"), "until"), limit, before == null ? null : Long.valueOf(before), text));
        ArrayNode list = Json.MAPPER.createArrayNode();
        records.forEach(r -> list.add(JsonViews.auditRecord(r)));
        if ("jsonl".equals(c.first("format"))) {
            c.resp.setStatus(200);
            c.resp.setContentType("application/x-ndjson");
            c.resp.setHeader("Content-Disposition", "attachment; filename=\"airlock-audit.jsonl\"");
            var out = c.resp.getOutputStream();
            for (JsonNode n : list) {
                out.write(Json.MAPPER.writeValueAsBytes(n));
                out.write('\n');
            }
            return;
        }
        ObjectNode page = Json.object();
        page.set("records", list);
        // a full page may have older records: 'next' asks for them (before=next); null when this was the oldest
        page.put("next", records.size() == limit && !records.isEmpty() ? Long.valueOf(records.getFirst().seq()) : null);
        c.send(200, page);
    }

    static String blank(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }

    private static java.time.Instant instant(String s, String field) {
        if (blank(s) == null) {
            return null;
        }
        try {
            return java.time.Instant.parse(s.trim());
        } catch (java.time.format.DateTimeParseException e) {
            throw AirlockException.invalid("query '" + field + "' must be an instant such as 2026-12-01T19:00:00Z, not '" + Printable.of(s) + "'");
        }
    }

    /**
     * The server's health, without a token: its sandboxes, and on a node of a cluster whether the
     * cluster's database answers (status {@code degraded} and why while it does not: creates are
     * refused). Nothing of the database's address or error is shown.
     */
    private ObjectNode health() {
        ObjectNode h = Json.object().put("status", "ok").put("sandboxes", service.size());
        var cluster = service.clusterHealth();
        if (cluster != null) {
            h.putObject("cluster").put("node", cluster.node()).put("database", cluster.databaseAnswers() ? "answers" : "does not answer");
            if (!cluster.databaseAnswers()) {
                h.put("status", "degraded").put("reason", "the cluster's database does not answer: creates are refused until it does;"
                        + " the sandboxes this node holds serve on");
            }
        }
        return h;
    }

    private void fork(RestCall c) throws IOException {
        ObjectNode body = (ObjectNode) c.json(FORK_FIELDS);
        Double n = body.has("count") ? Json.number(body, "count") : 1.0;
        if (n == null || n != Math.rint(n) || n < 1 || n > Command.Fork.MAX_COUNT) {
            throw AirlockException.invalid("field 'count' must be a whole number from 1 to " + Command.Fork.MAX_COUNT);
        }
        body.remove("count");
        ArrayNode list = Json.MAPPER.createArrayNode();
        c.execute(new Command.Fork(commands.create(body).from(c.param("snapshot")), n.intValue())).forEach(m -> list.add(JsonViews.sandbox(m)));
        c.send(201, Json.object().set("sandboxes", list));
    }

    /**
     * Upgrades to a WebSocket on the terminal of a background process (docs/rest-api.md): only
     * from this server's own Host and, if an Origin is sent, this server's own origin (as the
     * console), and only once the process was found to have a terminal with room for one more socket.
     */
    private void attach(RestCall c) throws IOException {
        String notLocal = LocalOrigin.consoleRefusal(c.req, bindHost);
        if (notLocal != null) {
            throw new AirlockException(Kind.PERMISSION_DENIED, notLocal);
        }
        if (!"websocket".equalsIgnoreCase(c.req.getHeader("Upgrade"))) {
            throw AirlockException.invalid("GET .../processes/{pid}/attach is a WebSocket endpoint: connect with a WebSocket client"
                    + " (Upgrade: websocket), such as the SDK's sandbox.process(pid).attach(...) or a browser's new WebSocket(url)");
        }
        Session.Listener socket = c.execute(new Command.Attach(c.param("id"), c.param("pid")));
        JettyWebSocketServerContainer container = JettyWebSocketServerContainer.getContainer(c.req.getServletContext());
        if (!container.upgrade((request, response) -> socket, c.req, c.resp) && !c.resp.isCommitted()) {
            throw AirlockException.invalid("the WebSocket upgrade failed: send a valid WebSocket handshake (version 13)");
        }
    }

    private static void processOutput(RestCall c, boolean stdout) throws IOException {
        SpilledOutput output = c.execute(new Command.ProcessOutput(c.param("id"), c.param("pid"))).output();
        c.octets();
        ProcessOutputFiles.copy(stdout ? output.stdoutFile() : output.stderrFile(), c.resp.getOutputStream());
    }

    private static void decide(RestCall c, boolean approve) throws IOException {
        JsonNode body = c.json(Set.of("reason", "by"));
        String by = Json.string(body, "by");
        String who = c.caller().via() + ":" + c.caller().client().name() + (by == null ? "" : " (" + Printable.of(by) + ")");
        c.send(200, JsonViews.approval(c.execute(new Command.Decide(c.param("id"), approve, who, Json.string(body, "reason")))));
    }

}
