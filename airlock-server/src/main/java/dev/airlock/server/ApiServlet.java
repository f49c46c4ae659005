package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxSpec;
import dev.airlock.server.audit.Audit;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.command.LimitChanges;
import dev.airlock.server.command.LimitField;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * The REST API (docs/rest-api.md). It parses and authenticates requests, calls the
 * {@link SandboxService}, and writes JSON; it holds no policy of its own.
 */
final class ApiServlet extends HttpServlet {

    private static final Logger LOG = LoggerFactory.getLogger(ApiServlet.class);
    /** JSON bodies are small; files go through the streaming files endpoint. */
    private static final int MAX_JSON_BODY = 32 * 1024 * 1024;
    private static final String NDJSON = "application/x-ndjson";

    private static final Set<String> CREATE_FIELDS = Set.of("profile", "image", "language", "limits", "env", "labels", "ttlSeconds", "idleTimeoutSeconds", "network");
    private static final Set<String> LIMIT_FIELDS = Set.copyOf(LimitField.wireNames());
    private static final Set<String> EXEC_FIELDS = Set.of("command", "language", "code", "cwd", "env", "stdin", "stdinBase64", "timeoutSeconds", "background");

    private final SandboxService service;
    private final ServerConfig config;
    private final ServerMetrics metrics;
    private final byte[] openApi;
    private final ClientDisconnects disconnects = new ClientDisconnects();

    ApiServlet(SandboxService service, ServerConfig config, ServerMetrics metrics, byte[] openApi) {
        this.service = service;
        this.config = config;
        this.metrics = metrics;
        this.openApi = openApi;
    }

    @Override
    public void destroy() {
        disconnects.close();
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String path = req.getRequestURI();
        try {
            if (path.equals("/health") && req.getMethod().equals("GET")) {
                send(resp, 200, Json.object().put("status", "ok").put("sandboxes", service.size()));
                return;
            }
            if (path.equals("/openapi.json") && req.getMethod().equals("GET")) {
                resp.setStatus(200);
                resp.setContentType("application/json");
                resp.getOutputStream().write(openApi);
                return;
            }
            Client client = service.policy().authenticate(req.getHeader("Authorization")).orElse(null);
            if (client == null) {
                service.refuseUnauthenticated(VIA, VIA, req.getMethod() + " " + template(segments(path)), req.getRemoteAddr(),
                        req.getHeader("Authorization") != null);
                resp.setHeader("WWW-Authenticate", "Bearer");
                error(resp, 401, "unauthenticated", "missing or wrong bearer token: " + AirlockServer.authHint(config));
                return;
            }
            String digest;
            try {
                digest = argsDigest(req);
            } catch (AirlockException e) {
                // a body that could not be read (too large): still on the log, then refused
                new Grants(req, client, null).close();
                throw e;
            }
            try (Grants grants = new Grants(req, client, digest)) {
                route(grants, req, resp, path);
            }
        } catch (AirlockException e) {
            if (!resp.isCommitted()) {
                if (e instanceof MethodNotAllowed) {
                    error(resp, 405, "method_not_allowed", e.getMessage());
                } else if (e instanceof BodyReader.TooSlow) {
                    resp.setHeader("Connection", "close");
                    error(resp, 408, "request_timeout", e.getMessage());
                } else {
                    error(resp, status(e.kind()), code(e.kind()), e.getMessage());
                }
            }
            if (e.kind() == Kind.INTERNAL) {
                LOG.warn("{} {} failed: {}", req.getMethod(), Json.printable(path), e.getMessage(), e);
            }
        } catch (RuntimeException e) {
            LOG.error("{} {} failed", req.getMethod(), Json.printable(path), e);
            if (!resp.isCommitted()) {
                error(resp, 500, "internal", "internal error: " + e);
            }
        }
    }

    /** The interface name in audit records and caller names. */
    static final String VIA = "rest";
    private static final String BODY = "airlock.body";

    /**
     * The authorization of one request. Each endpoint asks for its operation and runs inside
     * {@link #as}: the service records the request and the decision, and the endpoint's service
     * calls run as the authorized caller (and are refused without one).
     */
    private final class Grants implements AutoCloseable {
        private final HttpServletRequest req;
        private final Client client;
        private final String argsDigest;
        private boolean decided;

        Grants(HttpServletRequest req, Client client, String argsDigest) {
            this.req = req;
            this.client = client;
            this.argsDigest = argsDigest;
        }

        /** Authorizes {@code operation} for this request, then runs the endpoint as its caller. */
        void as(Operation operation, Endpoint endpoint) throws IOException {
            if (decided) {
                throw new IllegalStateException("a request is authorized once");
            }
            decided = true;
            Caller.run(service.authorize(request(operation)), endpoint::handle);
        }

        private SandboxService.Request request(Operation operation) {
            List<String> parts = segments(req.getRequestURI());
            String sandbox = parts.size() >= 3 && parts.get(0).equals("v1") && parts.get(1).equals("sandboxes") ? parts.get(2) : null;
            return new SandboxService.Request(client, VIA, VIA, req.getMethod() + " " + template(parts), operation, sandbox, argsDigest, null);
        }

        Client client() {
            return client;
        }

        @Override
        public void close() {
            if (!decided) {
                service.recordUndecided(request(null));
            }
        }
    }

    /** The work of one endpoint, run once its operation was granted. */
    @FunctionalInterface
    private interface Endpoint {
        void handle() throws IOException;
    }

    /**
     * The digest of a request's arguments (query string and JSON body) for its audit record. The
     * body is read here and kept for the endpoint; a file upload's content is not read (its size
     * is in the file record).
     */
    private String argsDigest(HttpServletRequest req) throws IOException {
        List<String> parts = segments(req.getRequestURI());
        byte[] body = new byte[0];
        boolean upload = parts.size() == 4 && parts.get(3).equals("files");
        if (!upload && (req.getMethod().equals("POST") || req.getMethod().equals("PUT"))) {
            body = body(req);
            req.setAttribute(BODY, body);
        }
        String query = req.getQueryString() == null ? "" : req.getQueryString();
        byte[] q = query.getBytes(StandardCharsets.UTF_8);
        byte[] args = new byte[q.length + 1 + body.length];
        System.arraycopy(q, 0, args, 0, q.length);
        args[q.length] = '\n';
        System.arraycopy(body, 0, args, q.length + 1, body.length);
        return Audit.digest(args);
    }

    /** The endpoint without its identifiers: {@code /v1/sandboxes/{id}/processes/{pid}}. */
    private static String template(List<String> parts) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            String p = parts.get(i);
            if (i == 2 && parts.get(1).equals("sandboxes")) {
                p = "{id}";
            } else if (i == 4 && parts.size() > 3 && parts.get(3).equals("processes")) {
                p = "{pid}";
            } else if (p.length() > 32) {
                p = "{...}";
            }
            b.append('/').append(p);
        }
        return b.isEmpty() ? "/" : b.toString();
    }

    private void route(Grants g, HttpServletRequest req, HttpServletResponse resp, String path) throws IOException {
        String method = req.getMethod();
        if (path.equals("/metrics")) {
            only(method, "GET");
            g.as(Operation.METRICS, () -> {
                resp.setStatus(200);
                resp.setContentType("text/plain; version=0.0.4; charset=utf-8");
                resp.getOutputStream().write(metrics.scrape().getBytes(StandardCharsets.UTF_8));
            });
            return;
        }
        List<String> parts = segments(path);
        if (parts.size() >= 2 && parts.get(0).equals("v1") && parts.get(1).equals("approvals")) {
            approvals(g, req, resp, parts);
            return;
        }
        if (parts.size() >= 2 && parts.get(0).equals("v1") && parts.get(1).equals("outputs")) {
            outputs(g, req, resp, parts);
            return;
        }
        if (parts.size() < 2 || !parts.get(0).equals("v1") || !parts.get(1).equals("sandboxes")) {
            throw noSuchEndpoint(req);
        }
        if (parts.size() == 2) {
            switch (method) {
                case "GET" -> {
                    g.as(Operation.SANDBOX_READ, () -> listSandboxes(req, resp));
                }
                case "POST" -> {
                    g.as(Operation.SANDBOX_CREATE, () -> createSandbox(req, resp));
                }
                default -> only(method, "GET, POST");
            }
            return;
        }
        String id = parts.get(2);
        String rest = String.join("/", parts.subList(3, parts.size()));
        switch (rest) {
            case "" -> {
                switch (method) {
                    case "GET" -> {
                        g.as(Operation.SANDBOX_READ, () -> send(resp, 200, Json.sandbox(service.get(id))));
                    }
                    case "DELETE" -> {
                        g.as(Operation.SANDBOX_DESTROY, () -> {
                            service.destroy(id);
                            resp.setStatus(204);
                        });
                    }
                    default -> only(method, "GET, DELETE");
                }
            }
            case "network" -> {
                switch (method) {
                    case "GET" -> {
                        g.as(Operation.SANDBOX_READ, () -> {
                            send(resp, 200, NetworkJson.write(service.get(id).sandbox().network()));
                        });
                    }
                    case "PUT" -> {
                        g.as(Operation.NETWORK_UPDATE, () -> {
                            NetworkPolicy policy = NetworkJson.parse(Json.parseObject(body(req), NetworkJson.FIELDS));
                            send(resp, 200, NetworkJson.write(service.updateNetwork(id, policy).sandbox().network()));
                        });
                    }
                    default -> only(method, "GET, PUT");
                }
            }
            case "egress" -> {
                only(method, "GET");
                g.as(Operation.SANDBOX_READ, () -> {
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    service.egress(id).forEach(r -> list.add(NetworkJson.record(r)));
                    send(resp, 200, Json.object().set("records", list));
                });
            }
            case "ttl" -> {
                only(method, "POST");
                g.as(Operation.SANDBOX_EXTEND, () -> {
                    JsonNode body = Json.parseObject(body(req), Set.of("ttlSeconds"));
                    send(resp, 200, Json.sandbox(service.extendTtl(id, ttl(Json.number(body, "ttlSeconds"), null))));
                });
            }
            case "exec" -> {
                only(method, "POST");
                g.as(Operation.EXEC, () -> exec(req, resp, id));
            }
            case "processes" -> {
                only(method, "GET");
                g.as(Operation.SANDBOX_READ, () -> {
                    ArrayNode list = Json.MAPPER.createArrayNode();
                    service.get(id).processes().forEach(p -> list.add(Json.process(p, false)));
                    send(resp, 200, Json.object().set("processes", list));
                });
            }
            case "files" -> files(g, req, resp, id, method);
            case "files/stat" -> {
                only(method, "GET");
                g.as(Operation.FILES_READ, () -> send(resp, 200, Json.file(service.stat(id, first(query(req, "path"))))));
            }
            case "files/list" -> {
                only(method, "GET");
                g.as(Operation.FILES_READ, () -> {
                    ArrayNode entries = Json.MAPPER.createArrayNode();
                    service.list(id, first(query(req, "path"))).forEach(f -> entries.add(Json.file(f)));
                    send(resp, 200, Json.object().set("entries", entries));
                });
            }
            case "files/mkdir" -> {
                only(method, "POST");
                g.as(Operation.FILES_WRITE, () -> {
                    JsonNode body = Json.parseObject(body(req), Set.of("path", "parents"));
                    send(resp, 201, Json.file(service.mkdir(id, Json.string(body, "path"), Json.bool(body, "parents"))));
                });
            }
            case "files/rename" -> {
                only(method, "POST");
                g.as(Operation.FILES_WRITE, () -> {
                    JsonNode body = Json.parseObject(body(req), Set.of("from", "to"));
                    send(resp, 200, Json.file(service.rename(id, Json.string(body, "from"), Json.string(body, "to"))));
                });
            }
            default -> processRoute(g, req, resp, id, parts, method);
        }
    }

    private void processRoute(Grants g, HttpServletRequest req, HttpServletResponse resp, String id, List<String> parts, String method)
            throws IOException {
        if (parts.size() < 5 || !parts.get(3).equals("processes") || parts.size() > 6) {
            throw noSuchEndpoint(req);
        }
        if (parts.size() == 5) {
            switch (method) {
                case "GET" -> {
                    g.as(Operation.SANDBOX_READ, () -> send(resp, 200, Json.process(service.get(id).process(parts.get(4)))));
                }
                case "DELETE" -> {
                    g.as(Operation.EXEC, () -> {
                        service.signal(id, parts.get(4), 9);
                        resp.setStatus(204);
                    });
                }
                default -> only(method, "GET, DELETE");
            }
            return;
        }
        if (parts.get(5).equals("stdout") || parts.get(5).equals("stderr")) {
            only(method, "GET");
            g.as(Operation.SANDBOX_READ, () -> {
                SpilledOutput output = service.get(id).process(parts.get(4)).output();
                resp.setStatus(200);
                resp.setContentType("application/octet-stream");
                ProcessOutputFiles.copy(parts.get(5).equals("stdout") ? output.stdoutFile() : output.stderrFile(), resp.getOutputStream());
            });
            return;
        }
        if (!parts.get(5).equals("signal")) {
            throw noSuchEndpoint(req);
        }
        only(method, "POST");
        g.as(Operation.EXEC, () -> {
            service.get(id).process(parts.get(4)); // a missing process is a 404 before the body is judged
            JsonNode body = Json.parseObject(body(req), Set.of("signal"));
            Double signal = Json.number(body, "signal");
            if (signal == null || signal != Math.rint(signal)) {
                throw AirlockException.invalid("field 'signal' must be a signal number, such as 15 (TERM) or 9 (KILL)");
            }
            send(resp, 202, Json.process(service.signal(id, parts.get(4), signal.intValue())));
        });
    }

    /** {@code /v1/approvals}: list pending, look one up, approve or deny. */
    private void approvals(Grants g, HttpServletRequest req, HttpServletResponse resp, List<String> parts) throws IOException {
        String method = req.getMethod();
        if (parts.size() == 2) {
            only(method, "GET");
            g.as(Operation.APPROVALS, () -> {
                ArrayNode list = Json.MAPPER.createArrayNode();
                service.pendingApprovals().forEach(a -> list.add(Json.approval(a)));
                send(resp, 200, Json.object().set("approvals", list));
            });
            return;
        }
        String id = parts.get(2);
        if (parts.size() == 3) {
            only(method, "GET");
            g.as(Operation.APPROVALS, () -> send(resp, 200, Json.approval(service.approval(id))));
            return;
        }
        if (parts.size() == 4 && (parts.get(3).equals("approve") || parts.get(3).equals("deny"))) {
            only(method, "POST");
            g.as(Operation.APPROVALS, () -> {
                JsonNode body = Json.parseObject(body(req), Set.of("reason", "by"));
                String by = Json.string(body, "by");
                String who = VIA + ":" + g.client().name() + (by == null ? "" : " (" + Json.printable(by) + ")");
                Approval a = service.decide(id, parts.get(3).equals("approve"), who, Json.string(body, "reason"));
                send(resp, 200, Json.approval(a));
            });
            return;
        }
        throw noSuchEndpoint(req);
    }

    /** {@code /v1/outputs}: what ended sandboxes left in /workspace/output. */
    private void outputs(Grants g, HttpServletRequest req, HttpServletResponse resp, List<String> parts) throws IOException {
        String method = req.getMethod();
        if (parts.size() == 2) {
            only(method, "GET");
            g.as(Operation.OUTPUTS, () -> {
                ArrayNode list = Json.MAPPER.createArrayNode();
                service.listOutputs().forEach(list::add);
                send(resp, 200, Json.object().set("outputs", list));
            });
            return;
        }
        String id = parts.get(2);
        if (parts.size() == 3) {
            switch (method) {
                case "GET" -> {
                    g.as(Operation.OUTPUTS, () -> send(resp, 200, (ObjectNode) service.outputs(id)));
                }
                case "DELETE" -> {
                    g.as(Operation.OUTPUTS, () -> {
                        service.deleteOutputs(id);
                        resp.setStatus(204);
                    });
                }
                default -> only(method, "GET, DELETE");
            }
            return;
        }
        if (parts.size() == 4 && parts.get(3).equals("files")) {
            only(method, "GET");
            g.as(Operation.OUTPUTS, () -> {
                String path = first(query(req, "path"));
                service.outputs(id); // a missing output is a 404, not a half-sent body
                resp.setStatus(200);
                resp.setContentType("application/octet-stream");
                service.readOutput(id, path == null ? "" : path, resp.getOutputStream());
            });
            return;
        }
        throw noSuchEndpoint(req);
    }

    private void listSandboxes(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        Map<String, String> filter = new LinkedHashMap<>();
        String[] labels = query(req, "label").toArray(String[]::new);
        if (labels != null) {
            for (String label : labels) {
                int eq = label.indexOf('=');
                if (eq <= 0) {
                    throw AirlockException.invalid("label filter '" + Json.printable(label) + "' is not key=value");
                }
                filter.put(label.substring(0, eq), label.substring(eq + 1));
            }
        }
        ArrayNode list = Json.MAPPER.createArrayNode();
        service.list(filter).forEach(s -> list.add(Json.sandbox(s)));
        send(resp, 200, Json.object().set("sandboxes", list));
    }

    private void createSandbox(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        JsonNode body = Json.parseObject(body(req), CREATE_FIELDS);
        JsonNode l = body.get("limits");
        JsonNode ln = l == null || l.isNull() ? null : Json.parseObject(l.toString().getBytes(StandardCharsets.UTF_8), LIMIT_FIELDS);
        LimitChanges changes = ln == null ? LimitChanges.NONE : limits(ln);
        UnaryOperator<Limits> limits = changes::applyTo;
        JsonNode network = body.get("network");
        Map<String, String> env = Json.stringMap(body, "env");
        SandboxSpec.validateEnv(env);
        Map<String, String> labels = Json.stringMap(body, "labels");
        if (labels.size() > 64) {
            throw AirlockException.invalid("a sandbox takes at most 64 labels");
        }
        Double ttlSeconds = Json.number(body, "ttlSeconds");
        Duration ttl = ttlSeconds == null ? null : ttl(ttlSeconds, null);
        Double idleSeconds = Json.number(body, "idleTimeoutSeconds");
        Duration idle = idleSeconds == null ? null : seconds("idleTimeoutSeconds", idleSeconds, null, config.maxTtl());
        String language = Json.string(body, "language");
        ManagedSandbox s = service.create(new SandboxService.CreateRequest(Json.string(body, "profile"), Json.string(body, "image"), limits,
                env, network == null || network.isNull() ? null : NetworkJson.parse(network), labels, ttl, idle,
                language == null ? null : Language.parse(language)));
        send(resp, 201, Json.sandbox(s));
    }

    /** The limits a create body changes, each value read as its kind says. */
    private static LimitChanges limits(JsonNode n) {
        return LimitChanges.read(n::has, f -> switch (f.kind()) {
            case SIZE -> Json.size(n, f.wireName());
            case SECONDS -> {
                Double seconds = Json.number(n, f.wireName());
                yield seconds == null ? null : seconds("limits." + f.wireName(), seconds, null, Duration.ofHours(24)).toMillis() / 1000.0;
            }
            case COUNT, DECIMAL -> Json.number(n, f.wireName());
        });
    }

    private Duration ttl(Double seconds, Duration fallback) {
        return seconds("ttlSeconds", seconds, fallback, config.maxTtl());
    }

    private static Duration seconds(String field, Double value, Duration fallback, Duration max) {
        if (value == null) {
            if (fallback == null) {
                throw AirlockException.invalid("field '" + field + "' is required");
            }
            return fallback;
        }
        if (value.isNaN() || value <= 0 || value > max.toSeconds()) {
            throw AirlockException.invalid("field '" + field + "' is " + value + ": give more than 0 and at most " + max.toSeconds() + " seconds");
        }
        return Duration.ofMillis(Math.round(value * 1000));
    }

    private void exec(HttpServletRequest req, HttpServletResponse resp, String id) throws IOException {
        JsonNode body = Json.parseObject(body(req), EXEC_FIELDS);
        ExecRequest request = execRequest(id, body);
        if (Json.bool(body, "background")) {
            send(resp, 202, Json.process(service.startBackground(id, request)));
            return;
        }
        String accept = req.getHeader("Accept");
        if (accept != null && accept.contains(NDJSON)) {
            service.get(id);
            resp.setStatus(200);
            resp.setContentType(NDJSON);
            service.execStreamed(id, request, start -> new NdjsonExecStream().run(start, resp.getOutputStream()));
            return;
        }
        // Nothing is written until the process ends, so a client that gives up is noticed by watching its connection:
        // interrupting this thread cancels the execution (its process group is killed, the result recorded as cancelled).
        Thread handler = Thread.currentThread();
        ExecResult result;
        try (ClientDisconnects.Watch watch = disconnects.watch(req, handler::interrupt)) {
            result = service.exec(id, request, OutputListener.NONE);
            if (watch.disconnected()) {
                Thread.interrupted();
                LOG.info("sandbox {}: the client of a plain exec went away; its execution was killed", id);
                return;
            }
        }
        send(resp, 200, Json.result(result));
    }

    private ExecRequest execRequest(String id, JsonNode body) {
        JsonNode command = body.get("command");
        List<String> argv = null;
        if (command != null && !command.isNull()) {
            if (!command.isArray() || command.isEmpty()) {
                throw AirlockException.invalid("field 'command' must be a non-empty array of strings, such as [\"python3\", \"-c\", \"print(1)\"]");
            }
            argv = new ArrayList<>();
            for (JsonNode a : command) {
                if (!a.isString()) {
                    throw AirlockException.invalid("field 'command' must hold only strings");
                }
                argv.add(a.asString());
            }
        }
        ExecRequest base = service.execRequest(id, ExecSource.of(argv, Json.string(body, "language"), Json.string(body, "code")));
        String stdin = Json.string(body, "stdin");
        String stdinBase64 = Json.string(body, "stdinBase64");
        if (stdin != null && stdinBase64 != null) {
            throw AirlockException.invalid("give 'stdin' or 'stdinBase64', not both");
        }
        byte[] input;
        try {
            input = stdinBase64 != null ? Base64.getDecoder().decode(stdinBase64) : stdin != null ? stdin.getBytes(StandardCharsets.UTF_8) : null;
        } catch (IllegalArgumentException e) {
            throw AirlockException.invalid("field 'stdinBase64' is not valid base64");
        }
        Double timeout = Json.number(body, "timeoutSeconds");
        return new ExecRequest(base.argv(), Json.stringMap(body, "env"), Json.string(body, "cwd"), input,
                timeout == null ? null : seconds("timeoutSeconds", timeout, null, Duration.ofHours(24)));
    }

    private void files(Grants g, HttpServletRequest req, HttpServletResponse resp, String id, String method) throws IOException {
        String path = first(query(req, "path"));
        switch (method) {
            case "PUT" -> {
                g.as(Operation.FILES_WRITE, () -> {
                    try (InputStream in = req.getInputStream()) {
                        try {
                            send(resp, 201, Json.file(service.writeFile(id, path, in)));
                        } catch (AirlockException e) {
                            if (e.kind() == Kind.TOO_LARGE) {
                                // read the rest of the upload (within a bound), so that the client is
                                // still listening when the 413 comes, instead of seeing a reset
                                drain(in, MAX_DRAIN);
                            }
                            throw e;
                        }
                    }
                });
            }
            case "GET" -> {
                g.as(Operation.FILES_READ, () -> {
                    // Stat first, so that a missing file is a 404 and not a half-sent body.
                    service.stat(id, path);
                    resp.setStatus(200);
                    resp.setContentType("application/octet-stream");
                    service.readFile(id, path, resp.getOutputStream());
                });
            }
            case "DELETE" -> {
                g.as(Operation.FILES_WRITE, () -> {
                    service.remove(id, path, query(req, "recursive").contains("true"));
                    resp.setStatus(204);
                });
            }
            default -> only(method, "GET, PUT, DELETE");
        }
    }

    private static byte[] body(HttpServletRequest req) throws IOException {
        if (req.getAttribute(BODY) instanceof byte[] read) {
            return read;
        }
        long declared = req.getContentLengthLong();
        return BodyReader.read(req, MAX_JSON_BODY, "request body is " + (declared > MAX_JSON_BODY ? declared + " bytes, " : "")
                + "over the limit of " + MAX_JSON_BODY + " bytes: send files with PUT /v1/sandboxes/{id}/files");
    }

    /**
     * Values of a query parameter, from the query string only: the servlet API's getParameter would
     * also parse an upload body sent as a form, consuming the file.
     */
    private static List<String> query(HttpServletRequest req, String name) {
        List<String> values = new ArrayList<>();
        String q = req.getQueryString();
        if (q == null) {
            return values;
        }
        for (String pair : q.split("&")) {
            int eq = pair.indexOf('=');
            String key = java.net.URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            if (key.equals(name)) {
                values.add(eq < 0 ? "" : java.net.URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return values;
    }

    private static String first(List<String> values) {
        return values.isEmpty() ? null : values.getFirst();
    }

    private static List<String> segments(String path) {
        List<String> parts = new ArrayList<>();
        for (String p : path.split("/")) {
            if (!p.isEmpty()) {
                parts.add(p);
            }
        }
        return parts;
    }

    /** The most of a refused upload that is read and dropped before the refusal is sent. */
    private static final long MAX_DRAIN = 16L << 20;

    private static void drain(InputStream in, long max) {
        try {
            byte[] buf = new byte[64 * 1024];
            long read = 0;
            int n;
            while (read < max && (n = in.read(buf)) > 0) {
                read += n;
            }
        } catch (IOException e) {
            // the client went away: nothing to answer
        }
    }

    private static AirlockException noSuchEndpoint(HttpServletRequest req) {
        return new AirlockException(Kind.NOT_FOUND, "no such endpoint: " + Json.printable(req.getRequestURI()) + " (see GET /openapi.json)");
    }

    private static void only(String method, String allowed) {
        if (!List.of(allowed.split(", ")).contains(method)) {
            throw new MethodNotAllowed(allowed);
        }
    }

    /** 405, with the methods that are allowed. */
    private static final class MethodNotAllowed extends AirlockException {
        MethodNotAllowed(String allowed) {
            super(Kind.INVALID_ARGUMENT, "method not allowed here: use " + allowed);
        }
    }

    private static void send(HttpServletResponse resp, int status, ObjectNode body) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(body.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static void error(HttpServletResponse resp, int status, String code, String message) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(Json.error(code, message));
    }

    static int status(Kind kind) {
        return switch (kind) {
            case INVALID_ARGUMENT -> 400;
            case NOT_FOUND -> 404;
            case CONFLICT -> 409;
            case PERMISSION_DENIED -> 403;
            case LIMIT_EXCEEDED -> 429;
            case TOO_LARGE -> 413;
            case UNAVAILABLE -> 503;
            case INTERNAL -> 500;
        };
    }

    static String code(Kind kind) {
        return switch (kind) {
            case INVALID_ARGUMENT -> "invalid_argument";
            case NOT_FOUND -> "not_found";
            case CONFLICT -> "conflict";
            case PERMISSION_DENIED -> "forbidden";
            case LIMIT_EXCEEDED -> "quota_exceeded";
            case TOO_LARGE -> "too_large";
            case UNAVAILABLE -> "unavailable";
            case INTERNAL -> "internal";
        };
    }
}
