package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.ExecResult;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Printable;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.http.ClientDisconnects;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.http.LocalOrigin;
import dev.airlock.server.output.ProcessOutputFiles;
import dev.airlock.server.output.SpilledOutput;
import dev.airlock.server.wire.Json;
import dev.airlock.server.wire.NetworkJson;
import org.eclipse.jetty.ee10.websocket.server.JettyWebSocketServerContainer;
import org.eclipse.jetty.websocket.api.Session;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.airlock.server.policy.Operation.APPROVALS;
import static dev.airlock.server.policy.Operation.AUDIT;
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

    private static final Logger LOG = LoggerFactory.getLogger(RestApi.class);
    private static final String NDJSON = "application/x-ndjson";
    private static final String SANDBOX = "/v1/sandboxes/{id}";
    private static final String PROCESS = SANDBOX + "/processes/{pid}";
    private static final String CONTEXT = SANDBOX + "/contexts/{context}";
    /** The most of a refused upload that is read and dropped before the refusal is sent. */
    private static final long MAX_DRAIN = 16L << 20;
    private static final Set<String> FORK_FIELDS = java.util.stream.Stream.concat(RestCommands.CREATE_FIELDS.stream(), java.util.stream.Stream.of("count"))
            .collect(java.util.stream.Collectors.toUnmodifiableSet());

    /** The methods a preview port forwards (any other is a 405). */
    static final List<String> PROXIED_METHODS = List.of("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");
    static final String PORT_PATH = SANDBOX + "/ports/{port}/" + RestRoute.REST;
    static final String PREVIEW_PATH = "/preview/{token}/" + RestRoute.REST;
    /** The door of requests through a preview link, in audit records. */
    static final String PREVIEW_VIA = "preview";

    private final RestCommands commands;
    private final CommandApi service;
    private final PortProxy ports = new PortProxy();
    private final PreviewLinks links = new PreviewLinks(java.time.Clock.systemUTC());
    private final ClientDisconnects disconnects;
    /** The address the server listens on: a terminal's WebSocket must name it, or a loopback name, as its Host. */
    private final String bindHost;
    private final List<RestRoute> routes;

    RestApi(RestCommands commands, ClientDisconnects disconnects, CommandApi service, byte[] openApi, ApprovalEvents approvalEvents,
            String bindHost) {
        this.commands = commands;
        this.bindHost = bindHost;
        this.disconnects = disconnects;
        this.service = service;
        List<RestRoute> table = new java.util.ArrayList<>(List.of(
                new RestRoute("GET", "/health", null, c -> c.send(200, Json.object().put("status", "ok").put("sandboxes", service.size()))),
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
                new RestRoute("POST", "/v1/run", RUN, this::run),
                new RestRoute("GET", "/v1/sandboxes", SANDBOX_READ, this::list),
                new RestRoute("GET", "/v1/images", SANDBOX_READ, c -> c.send(200, Json.images(c.execute(new Command.ListImages())))),
                new RestRoute("POST", "/v1/sandboxes", SANDBOX_CREATE,
                        c -> c.send(201, JsonViews.sandbox(c.execute(commands.create(c.json(RestCommands.CREATE_FIELDS)))))),
                new RestRoute("GET", SANDBOX, SANDBOX_READ, c -> c.send(200, JsonViews.sandbox(c.execute(new Command.Describe(c.param("id"))), c.caller()))),
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
                new RestRoute("GET", SANDBOX + "/egress", SANDBOX_READ, c -> {
                    int limit = limit(c.first("limit"), Command.Egress.KEPT, Command.Egress.KEPT);
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    var records = c.execute(new Command.Egress(c.param("id")));
                    records.subList(Math.max(0, records.size() - limit), records.size()).forEach(r -> list.add(NetworkJson.record(r)));
                    c.send(200, Json.object().set("records", list));
                }),
                new RestRoute("POST", SANDBOX + "/ttl", SANDBOX_EXTEND, c -> {
                    JsonNode body = c.json(Set.of("ttlSeconds"));
                    c.send(200, JsonViews.sandbox(c.execute(new Command.ExtendTtl(c.param("id"), commands.ttl(Json.number(body, "ttlSeconds")))), c.caller()));
                }),
                new RestRoute("POST", SANDBOX + "/pause", SANDBOX_PAUSE, c -> c.send(200, JsonViews.sandbox(c.execute(new Command.Pause(c.param("id")))))),
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
                new RestRoute("POST", SANDBOX + "/exec", EXEC, this::exec),
                new RestRoute("GET", SANDBOX + "/processes", SANDBOX_READ, c -> {
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    c.execute(new Command.Describe(c.param("id"))).processes().forEach(p -> list.add(JsonViews.process(p, false)));
                    c.send(200, Json.object().set("processes", list));
                }),
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
                new RestRoute("POST", CONTEXT + "/run", EXEC, this::runCell),
                new RestRoute("POST", CONTEXT + "/restart", EXEC,
                        c -> c.send(200, JsonViews.context(c.execute(new Command.RestartContext(c.param("id"), c.param("context")))))),
                new RestRoute("DELETE", CONTEXT, EXEC, c -> {
                    c.execute(new Command.DeleteContext(c.param("id"), c.param("context")));
                    c.noContent();
                }),
                new RestRoute("PUT", SANDBOX + "/files", FILES_WRITE, this::upload),
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
        // preview ports: the link first, so that a POST to .../link makes one rather than reaching the sandbox's /link
        table.add(new RestRoute("POST", SANDBOX + "/ports/{port}/link", EXEC, this::previewLink));
        for (String method : PROXIED_METHODS) {
            table.add(new RestRoute(method, PORT_PATH, EXEC, this::port));
        }
        for (String method : PROXIED_METHODS) {
            table.add(new RestRoute(method, PREVIEW_PATH, null, this::preview));
        }
        this.routes = List.copyOf(table);
    }

    /** Ends the preview streams still open. */
    void close() {
        ports.close();
    }

    /** A request to a preview port, forwarded to the server inside the sandbox (docs/rest-api.md, "Preview ports"). */
    private void port(RestCall c) throws IOException {
        int port = port(c.param("port"));
        SandboxView s = c.execute(new Command.OpenPort(c.param("id"), port));
        ports.forward(c.req, c.resp, s, port, target(c.req, RestRoute.segments(SANDBOX + "/ports/{port}").size()));
    }

    /** A preview link: a capability URL for that port, as this client, for a browser (docs/security-model.md, "Preview ports"). */
    private void previewLink(RestCall c) throws IOException {
        int port = port(c.param("port"));
        SandboxView s = c.execute(new Command.OpenPort(c.param("id"), port));
        PreviewLinks.Created made = links.create(c.caller().client().name(), s.id(), port, service::live);
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("event", "preview-link");
        d.put("port", port);
        d.put("expiresAt", made.link().expiresAt().toString());
        dev.airlock.server.policy.Caller.run(c.caller(), () -> service.recordLifecycle(s.id(), d));
        c.send(201, Json.object().put("url", made.url()).put("port", port).put("expiresAt", made.link().expiresAt().toString()));
    }

    /**
     * A request through a preview link: no credential but the link's token, which stands for its
     * client; each request is decided again as that client (which must still hold {@code exec} and
     * own the sandbox, so a link ends with its sandbox) and recorded as the {@value #PREVIEW_VIA} door.
     */
    private void preview(RestCall c) throws IOException {
        PreviewLinks.Link link = links.find(c.param("token"));
        dev.airlock.server.policy.Client client = link == null ? null : service.policy().clients().get(link.client());
        if (client == null) {
            throw new AirlockException(Kind.NOT_FOUND, "no such preview link: it expired (links last "
                    + PreviewLinks.LIFETIME.toMinutes() + " minutes), its sandbox ended, or it was never made;"
                    + " make a new one with POST /v1/sandboxes/{id}/ports/{port}/link (the console's Open preview)");
        }
        String query = c.req.getQueryString() == null ? "" : c.req.getQueryString();
        var caller = service.authorize(new CommandApi.Request(client, PREVIEW_VIA, PREVIEW_VIA, c.req.getMethod() + " " + PREVIEW_PATH,
                EXEC, link.sandbox(), dev.airlock.server.audit.Audit.digest((query + "\n").getBytes(StandardCharsets.UTF_8)), null));
        SandboxView s = service.execute(caller, new Command.OpenPort(link.sandbox(), link.port()));
        ports.forward(c.req, c.resp, s, link.port(), target(c.req, RestRoute.segments("/preview/{token}").size()));
    }

    private static int port(String s) {
        if (s == null || !s.matches("[0-9]{1,5}") || Integer.parseInt(s) < 1 || Integer.parseInt(s) > 65535) {
            throw AirlockException.invalid("'" + Printable.of(String.valueOf(s)) + "' is not a port: give a number from 1 to 65535, such as 8000");
        }
        return Integer.parseInt(s);
    }

    /**
     * The request's path after its first {@code skip} segments, as the client sent it (still
     * percent-encoded), with its query string: what the sandbox's server is asked for.
     */
    static String target(jakarta.servlet.http.HttpServletRequest req, int skip) {
        String uri = req.getRequestURI();
        int i = 0;
        for (int seen = 0; seen < skip && i < uri.length(); ) {
            while (i < uri.length() && uri.charAt(i) == '/') {
                i++;
            }
            while (i < uri.length() && uri.charAt(i) != '/') {
                i++;
            }
            seen++;
        }
        String path = i >= uri.length() ? "/" : uri.substring(i);
        return req.getQueryString() == null ? path : path + "?" + req.getQueryString();
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
    private static int limit(String l, int absent, int max) {
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
        var records = c.execute(new Command.ReadAudit(blank(c.first("sandbox")), blank(c.first("client")), blank(c.first("kind")),
                instant(c.first("since"), "since"), instant(c.first("until"), "until"), limit));
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
        c.send(200, Json.object().set("records", list));
    }

    private static String blank(String s) {
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

    private void exec(RestCall c) throws IOException {
        JsonNode body = c.json(RestCommands.EXEC_FIELDS);
        String id = c.param("id");
        var source = RestCommands.source(body);
        var options = RestCommands.options(body);
        if (Json.bool(body, "background")) {
            c.send(202, JsonViews.process(c.execute(new Command.StartProcess(id, source, options))));
            return;
        }
        String accept = c.req.getHeader("Accept");
        if (accept != null && accept.contains(NDJSON)) {
            c.resp.setStatus(200);
            c.resp.setContentType(NDJSON);
            c.execute(new Command.Exec(id, source, options, start -> new NdjsonExecStream().run(start, c.resp.getOutputStream())));
            return;
        }
        // Nothing is written until the process ends, so a client that gives up is noticed by watching its connection:
        // interrupting this thread cancels the execution (it is killed with everything it started, the result recorded as cancelled).
        Thread handler = Thread.currentThread();
        ExecResult result;
        try (ClientDisconnects.Watch watch = disconnects.watch(c.req, handler::interrupt)) {
            result = c.execute(new Command.Exec(id, source, options, Command.Waiter.listening(OutputListener.NONE)));
            if (watch.disconnected()) {
                Thread.interrupted();
                LOG.info("sandbox {}: the client of a plain exec went away; its execution was killed", id);
                return;
            }
        }
        c.send(200, Json.result(result));
    }

    /** Runs a cell; as NDJSON (Accept: application/x-ndjson) its outputs stream as they come, then the result. */
    private void runCell(RestCall c) throws IOException {
        JsonNode body = c.json(RestCommands.CELL_FIELDS);
        String id = c.param("id");
        String context = c.param("context");
        String code = Json.string(body, "code");
        java.time.Duration timeout = RestCommands.timeout(body);
        String accept = c.req.getHeader("Accept");
        if (accept != null && accept.contains(NDJSON)) {
            c.resp.setStatus(200);
            c.resp.setContentType(NDJSON);
            new NdjsonCellStream().run(listener -> c.execute(new Command.RunCell(id, context, code, timeout, listener)),
                    c.resp.getOutputStream());
            return;
        }
        Thread handler = Thread.currentThread();
        dev.airlock.server.command.CellResult result;
        try (ClientDisconnects.Watch watch = disconnects.watch(c.req, handler::interrupt)) {
            result = c.execute(new Command.RunCell(id, context, code, timeout, null));
            if (watch.disconnected()) {
                Thread.interrupted();
                LOG.info("sandbox {}: the client of a cell in context {} went away; the cell was interrupted", id, context);
                return;
            }
        }
        c.send(200, JsonViews.cell(result));
    }

    private void run(RestCall c) throws IOException {
        Command.Run run = RestCommands.run(c.json(RestCommands.RUN_FIELDS));
        Thread handler = Thread.currentThread();
        Command.RunResult r;
        try (ClientDisconnects.Watch watch = disconnects.watch(c.req, handler::interrupt)) {
            r = c.execute(run);
            if (watch.disconnected()) {
                Thread.interrupted();
                return;
            }
        }
        ObjectNode answer = Json.result(r.result());
        ArrayNode outputs = answer.putArray("outputs");
        for (Command.RunOutput o : r.outputs()) {
            ObjectNode n = outputs.addObject().put("path", o.path()).put("size", o.size());
            if (o.content() != null) {
                n.put("contentBase64", Base64.getEncoder().encodeToString(o.content()));
            } else {
                n.put("notReturned", o.notReturned());
            }
        }
        c.send(200, answer);
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

    private void upload(RestCall c) throws IOException {
        try (InputStream in = c.req.getInputStream()) {
            try {
                c.send(201, Json.file(c.execute(new Command.WriteFile(c.param("id"), c.first("path"), in))));
            } catch (AirlockException e) {
                if (e.kind() == Kind.TOO_LARGE) {
                    // read the rest of the upload (within a bound), so that the client is
                    // still listening when the 413 comes, instead of seeing a reset
                    drain(in);
                }
                throw e;
            }
        }
    }

    private static void decide(RestCall c, boolean approve) throws IOException {
        JsonNode body = c.json(Set.of("reason", "by"));
        String by = Json.string(body, "by");
        String who = c.caller().via() + ":" + c.caller().client().name() + (by == null ? "" : " (" + Printable.of(by) + ")");
        c.send(200, JsonViews.approval(c.execute(new Command.Decide(c.param("id"), approve, who, Json.string(body, "reason")))));
    }

    private static void drain(InputStream in) {
        try {
            byte[] buf = new byte[64 * 1024];
            long read = 0;
            int n;
            while (read < MAX_DRAIN && (n = in.read(buf)) > 0) {
                read += n;
            }
        } catch (IOException e) {
            // the client went away: nothing to answer
        }
    }
}
