package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.audit.Audit;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.command.NodeRouting;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.control.Refused;
import dev.airlock.server.http.BodyReader;
import dev.airlock.server.http.ClientDisconnects;
import dev.airlock.server.http.ConsoleSessions;
import dev.airlock.server.http.HttpStatus;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.http.LocalOrigin;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.wire.Json;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The REST door (docs/rest-api.md): it finds the request's route in the {@link RestApi} table,
 * authenticates the client, asks the service whether the route's operation is granted (which
 * records the request and the decision), and lets the route's handler translate the request into
 * commands. It holds no policy of its own; every refusal is rendered the same way, with the
 * control and rule that made it.
 */
public final class ApiServlet extends HttpServlet {

    /** The header the console's refresh marks its reads with: folded on the audit log ({@link #polled}). */
    static final String POLL_HEADER = "X-Airlock-Poll";
    /** How long one window of a console page's refresh reads lasts: an hour of an open page adds three records. */
    static final java.time.Duration POLLED_READS_WINDOW = java.time.Duration.ofHours(1);
    /** The reads the console's pages poll, the only ones the mark folds: never a download, a file listing or an attach. */
    static final java.util.Set<String> POLLED_READS = java.util.Set.of("/v1/sandboxes", "/v1/sandboxes/{id}", "/v1/approvals",
            "/v1/metrics/history", "/v1/sandboxes/{id}/processes/{pid}/stdout");

    private static final Logger LOG = LoggerFactory.getLogger(ApiServlet.class);
    /** The interface name in audit records and caller names. */
    static final String VIA = "rest";

    private final CommandApi service;
    private final ServerConfig config;
    private final ClientDisconnects disconnects = new ClientDisconnects();
    private final RestApi api;
    private final List<RestRoute> routes;
    private final ConsoleSessions sessions;
    private final ApprovalEvents approvalEvents;
    /** Whether this servlet serves a node's peer port: calls other nodes forward, and nothing else (docs/cluster.md). */
    private final boolean peerPort;
    private final dev.airlock.server.command.ToolCalls toolCalls;

    /**
     * @param peerPort true for a node of a cluster's peer port: it takes only other nodes' signed calls
     *                 and carries them out here; false for the API port, which takes clients' requests
     *                 and, on a node of a cluster, forwards those another node must carry out
     */
    public ApiServlet(CommandApi service, ServerConfig config, byte[] openApi, ConsoleSessions sessions, boolean peerPort) {
        this(service, config, openApi, sessions, peerPort, null);
    }

    /** {@code toolCalls}: on a node's peer port, the MCP door's tools, for the calls another node's MCP door sends on. */
    public ApiServlet(CommandApi service, ServerConfig config, byte[] openApi, ConsoleSessions sessions, boolean peerPort,
                      dev.airlock.server.command.ToolCalls toolCalls) {
        this.toolCalls = toolCalls;
        this.peerPort = peerPort;
        this.service = service;
        this.config = config;
        this.sessions = sessions;
        this.approvalEvents = new ApprovalEvents();
        service.onApprovalsChanged(approvalEvents::changed);
        this.api = new RestApi(new RestCommands(config.maxTtl()), disconnects, service, openApi, approvalEvents, config.host());
        this.routes = api.routes();
    }

    @Override
    public void destroy() {
        approvalEvents.close();
        disconnects.close();
        api.close();
    }

    /** Who sent a request, and through which door: the bearer token's REST, or the console's cookie. */
    private record Authenticated(Client client, String via) {
    }

    /**
     * The one place a REST request's client is found: an {@code Authorization: Bearer} header, or
     * else the web console's session cookie. A cookie request must also pass the Host/Origin check
     * of /mcp ({@link LocalOrigin}) and, unless it only reads (GET, HEAD), carry the session's CSRF
     * token in {@link ConsoleSessions#CSRF_HEADER}: a page of another site can make a browser send
     * the cookie, but can neither read that token nor set that header. Null when no client is
     * found (a 401 follows); a refused cookie request is answered here (403) and throws.
     */
    private Authenticated authenticate(HttpServletRequest req, HttpServletResponse resp) throws IOException, CookieRefused {
        if (peerPort) {
            // another node's call: the client it acts for, when the cluster's secret signs it; never a client's own token
            NodeRouting routing = service.routing();
            String name = routing == null ? null : routing.forwardedClient(req);
            Client client = name == null ? null : service.policy().clients().get(name);
            return client == null ? null
                    : new Authenticated(client, ConsoleSessions.VIA.equals(req.getHeader(NodeRouting.VIA_HEADER)) ? ConsoleSessions.VIA : VIA);
        }
        String authorization = req.getHeader("Authorization");
        String cookie = authorization == null ? ConsoleSessions.cookie(req) : null;
        if (cookie == null) {
            Client client = service.policy().authenticate(authorization).orElse(null);
            return client == null ? null : new Authenticated(client, VIA);
        }
        ConsoleSessions.Session s = sessions.lookup(cookie);
        Client client = s == null ? null : service.policy().clients().get(s.client);
        if (client == null) {
            return null;
        }
        String notLocal = LocalOrigin.consoleRefusal(req, config.host());
        if (notLocal != null) {
            error(resp, 403, "forbidden", notLocal, null);
            throw new CookieRefused(client, "origin");
        }
        // A WebSocket is opened with a GET, and a browser's WebSocket can carry no header of the page's
        // own: the console's terminal sends the session's CSRF token as the query parameter csrf.
        if ("websocket".equalsIgnoreCase(req.getHeader("Upgrade")) && !s.csrfMatches(req.getParameter("csrf"))) {
            error(resp, 403, "csrf", "a WebSocket with the console's session cookie must carry the session's CSRF token as its"
                    + " csrf query parameter (a cross-site page cannot): open the terminal from the console, or connect with"
                    + " 'Authorization: Bearer <token>' instead of the cookie", null);
            throw new CookieRefused(client, "csrf");
        }
        boolean reads = req.getMethod().equals("GET") || req.getMethod().equals("HEAD");
        if (!reads && !s.csrfMatches(req.getHeader(ConsoleSessions.CSRF_HEADER))) {
            error(resp, 403, "csrf", "a " + req.getMethod() + " with the console's session cookie must carry the session's CSRF token in the "
                    + ConsoleSessions.CSRF_HEADER + " header (a cross-site request cannot): reload the console, or call the API with"
                    + " 'Authorization: Bearer <token>' instead of the cookie", null);
            throw new CookieRefused(client, "csrf");
        }
        return new Authenticated(client, ConsoleSessions.VIA);
    }

    /** A cookie request of {@code client} refused by {@link #authenticate} (already answered), by {@code rule}. */
    private static final class CookieRefused extends Exception {
        final transient Client client;
        final String rule;

        CookieRefused(Client client, String rule) {
            super(null, null, false, false);
            this.client = client;
            this.rule = rule;
        }
    }

    /** The route a request asked for, its path parameters, and the methods its path allows. */
    private record Match(RestRoute route, Map<String, String> params, List<String> allowed, String template) {
    }

    private Match match(String method, List<String> parts) {
        List<String> allowed = new ArrayList<>();
        String template = null;
        for (RestRoute r : routes) {
            Map<String, String> params = r.match(parts);
            if (params == null) {
                continue;
            }
            template = template == null ? r.template() : template;
            if (r.method().equals(method)) {
                return new Match(r, params, List.of(method), r.template());
            }
            allowed.add(r.method());
        }
        return new Match(null, Map.of(), allowed, template == null ? unmatched(parts) : template);
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String path = req.getRequestURI();
        try {
            List<String> parts = RestRoute.segments(path);
            Match m = match(req.getMethod(), parts);
            if (m.route() != null && m.route().operation() == null) {
                m.route().handler().handle(new RestCall(req, resp, m.params(), service, null));
                return;
            }
            String endpoint = req.getMethod() + " " + m.template();
            String origin = req.getHeader("Origin") == null ? null : Json.printable(req.getHeader("Origin"));
            if ("websocket".equalsIgnoreCase(req.getHeader("Upgrade")) && origin != null) {
                endpoint += " from " + origin;   // whose page opened it, on the audit log
            }
            if (!peerPort && req.getHeader(NodeRouting.NODE_HEADER) != null) {
                service.refuseUnauthenticated(VIA, VIA, endpoint, req.getRemoteAddr(), true);
                error(resp, 401, "unauthenticated", "a node's call (" + NodeRouting.NODE_HEADER + ") is accepted only on a node's peer"
                        + " port, never on the API port; a client authenticates with 'Authorization: Bearer <token>'", null);
                return;
            }
            Authenticated auth;
            try {
                auth = authenticate(req, resp);
            } catch (CookieRefused refused) {
                service.refuseCrossSite(refused.client, ConsoleSessions.VIA, req.getMethod() + " " + m.template(), origin, refused.rule);
                return;
            }
            if (auth == null) {
                boolean cookie = req.getHeader("Authorization") == null && ConsoleSessions.cookie(req) != null;
                service.refuseUnauthenticated(VIA, VIA, endpoint, req.getRemoteAddr(), req.getHeader("Authorization") != null || cookie);
                if (peerPort) {
                    error(resp, 401, "unauthenticated", "this is a node's peer port: it takes only calls of the cluster's nodes, signed"
                            + " with the cluster's secret, and no client's token; clients call a node's API port", null);
                    return;
                }
                resp.setHeader("WWW-Authenticate", "Bearer");
                error(resp, 401, "unauthenticated", cookie ? "the console session expired or was signed out: sign in again at /"
                        : "missing or wrong bearer token: " + config.authHint(), null);
                return;
            }
            Client client = auth.client();
            String via = auth.via();
            if (peerPort && toolCalls != null && path.equals(NodeRouting.TOOL_CALLS) && req.getMethod().equals("POST")) {
                // an MCP tool call on a sandbox this node holds: the tool authorizes, records and runs it as the MCP door would
                byte[] answer = toolCalls.call(client, req.getHeader(NodeRouting.NODE_HEADER).split(" ", 2)[0], RestCall.body(req));
                resp.setStatus(200);
                resp.setContentType("application/json");
                resp.getOutputStream().write(answer);
                return;
            }
            if (peerPort && path.startsWith(NodeRouting.SNAPSHOTS + "/") && req.getMethod().equals("GET")) {
                snapshotForNode(resp, client, RestRoute.segments(path.substring(NodeRouting.SNAPSHOTS.length())));
                return;
            }
            if (peerPort && toolCalls != null && path.equals(NodeRouting.SESSION_ENDED) && req.getMethod().equals("POST")) {
                // an MCP session of the node that signed this ended: what this node made for it is destroyed
                tools.jackson.databind.JsonNode ended = Json.parseObject(RestCall.body(req), java.util.Set.of("session"));
                String session = Json.string(ended, "session");
                if (session == null || session.isEmpty() || session.length() > 200) {
                    throw AirlockException.invalid("'session' is the id of the MCP session that ended (at most 200 characters)");
                }
                toolCalls.sessionEnded(req.getHeader(NodeRouting.NODE_HEADER).split(" ", 2)[0], session);
                resp.setStatus(204);
                return;
            }
            if (peerPort) {
                // which node the client reached, on this node's audit log (the name is in what the cluster's secret signed)
                endpoint += " from node " + req.getHeader(NodeRouting.NODE_HEADER).split(" ", 2)[0];
            }
            String sandbox = m.params().get("id") != null && m.template().startsWith("/v1/sandboxes/") ? m.params().get("id") : null;
            String digest;
            try {
                digest = argsDigest(req, m.route());
            } catch (AirlockException e) {
                // a body that could not be read (too large): still on the log, then refused
                service.recordUndecided(request(client, via, endpoint, null, sandbox, null, null));
                throw e;
            }
            if (m.route() == null) {
                service.recordUndecided(request(client, via, endpoint, null, sandbox, digest, null));
                if (!m.allowed().isEmpty()) {
                    resp.setHeader("Allow", String.join(", ", m.allowed()));
                    error(resp, 405, "method_not_allowed", "method not allowed here: use " + String.join(", ", m.allowed()), null);
                    return;
                }
                throw new AirlockException(Kind.NOT_FOUND, "no such endpoint: " + Json.printable(path) + " (see GET /openapi.json)");
            }
            NodeRouting.Peer elsewhere;
            try {
                elsewhere = elsewhere(req, m, sandbox, client);
            } catch (AirlockException e) {
                service.recordUndecided(request(client, via, endpoint, m.route().operation(), sandbox, digest, null));
                throw e;
            }
            if (elsewhere != null) {
                // that node authorizes, records and carries it out, as its own door would
                try {
                    if ("websocket".equalsIgnoreCase(req.getHeader("Upgrade"))) {
                        relay(elsewhere, req, resp, client, via);
                    } else {
                        service.routing().forward(elsewhere, req, resp, (byte[]) req.getAttribute(RestCall.BODY), client.name(), via);
                    }
                    return;
                } catch (NodeRouting.Unreached e) {
                    if (sandbox != null || !m.template().equals("/v1/sandboxes")) {
                        throw e;
                    }
                    // a create placed on a node that died since its last heartbeat: this node creates it instead
                    LOG.info("create placed on node '{}' is made here: {}", elsewhere.name(), e.getMessage());
                }
            }
            var caller = service.authorize(request(client, via, endpoint, m.route().operation(), sandbox, digest, polled(req, m.template(), client, via, sandbox)));
            try {
                m.route().handler().handle(new RestCall(req, resp, m.params(), service, caller, joined(req, m, client, via)));
            } catch (UncheckedIOException e) {
                throw e.getCause(); // the client went away mid-answer
            }
        } catch (AirlockException e) {
            if (!resp.isCommitted()) {
                if (e instanceof BodyReader.TooSlow) {
                    resp.setHeader("Connection", "close");
                    error(resp, 408, "request_timeout", e.getMessage(), null);
                } else {
                    error(resp, HttpStatus.of(e.kind()), code(e.kind()), e.getMessage(), e);
                }
            }
            if (e.kind() == Kind.INTERNAL) {
                LOG.warn("{} {} failed: {}", req.getMethod(), Json.printable(path), e.getMessage(), e);
            }
        } catch (RuntimeException e) {
            LOG.error("{} {} failed", req.getMethod(), Json.printable(path), e);
            if (!resp.isCommitted()) {
                error(resp, 500, "internal", "internal error: " + e, null);
            }
        }
    }

    /**
     * On a node's peer port, for another node that forks a snapshot this node holds (docs/cluster.md,
     * "Snapshots"): {@code [id]}, the snapshot's record and manifest (base64, byte for byte), whether
     * it keeps processes, and its profile's tier; {@code [id, blobs, digest]}, one of its blobs. Only
     * the client's own snapshots; the fork is authorized and recorded by the node that makes it.
     */
    private void snapshotForNode(HttpServletResponse resp, Client client, List<String> parts) throws IOException {
        if (parts.size() == 1) {
            var held = service.exportSnapshot(parts.getFirst(), client.name());
            tools.jackson.databind.JsonNode record = Json.MAPPER.readTree(held.record());
            dev.airlock.server.policy.Profile profile = service.policy().profiles().get(record.path("profile").asString());
            java.util.Base64.Encoder b64 = java.util.Base64.getEncoder();
            var out = Json.object().put("record", b64.encodeToString(held.record())).put("manifest", b64.encodeToString(held.manifest()))
                    .put("memory", record.path("memory").asBoolean(false));
            if (profile != null && profile.isolation() != null) {
                out.put("tier", profile.isolation().id());
            }
            resp.setStatus(200);
            resp.setContentType("application/json");
            resp.getOutputStream().write(out.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } else if (parts.size() == 3 && parts.get(1).equals("blobs")) {
            resp.setStatus(200);
            resp.setContentType("application/octet-stream");
            try {
                service.exportSnapshotBlob(parts.getFirst(), client.name(), parts.get(2), resp.getOutputStream());
            } catch (AirlockException e) {
                if (!resp.isCommitted()) {
                    resp.resetBuffer();   // what was read of a blob that failed its check is not sent, not even inside the refusal
                }
                throw e;
            }
        } else {
            throw new AirlockException(Kind.NOT_FOUND, "no such endpoint on a node's peer port: " + NodeRouting.SNAPSHOTS + "/"
                    + Json.printable(String.join("/", parts)));
        }
    }

    /**
     * On the API port of a node of a cluster: the node that must carry this request out when it is
     * not this one (the node that holds its sandbox; for a create, the node placement chooses), else
     * null. A call that came through the peer port is never sent on: it is this node's.
     */
    private NodeRouting.Peer elsewhere(HttpServletRequest req, Match m, String sandbox, Client client) throws IOException {
        NodeRouting routing = service.routing();
        if (peerPort || routing == null) {
            return null;
        }
        if (sandbox != null) {
            return routing.ownerOf(sandbox, client.name());
        }
        if (m.template().startsWith("/v1/approvals/{id}")) {
            return routing.approvalOwner(m.params().get("id"));
        }
        if (m.template().equals("/v1/snapshots/{snapshot}/fork") && req.getMethod().equals("POST")) {
            return routing.forkPlace(m.params().get("snapshot"), client.name());
        }
        if (m.template().startsWith("/v1/snapshots/{snapshot}")) {
            return routing.snapshotOwner(m.params().get("snapshot"));
        }
        return m.template().equals("/v1/sandboxes") && req.getMethod().equals("POST") ? placeCreate(routing, req, client) : null;
    }

    /**
     * A terminal's WebSocket on a sandbox node {@code to} holds: checked here as the attach route
     * checks it (this server's own Host, and Origin when one is sent: the other node sees neither),
     * then upgraded to a relay to that node's attach.
     */
    private void relay(NodeRouting.Peer to, HttpServletRequest req, HttpServletResponse resp, Client client, String via) {
        String notLocal = LocalOrigin.consoleRefusal(req, config.host());
        if (notLocal != null) {
            throw new AirlockException(Kind.PERMISSION_DENIED, notLocal);
        }
        var socket = service.routing().relay(to, req, client.name(), via);
        var container = org.eclipse.jetty.ee10.websocket.server.JettyWebSocketServerContainer.getContainer(req.getServletContext());
        try {
            if (!container.upgrade((request, response) -> socket, req, resp) && !resp.isCommitted()) {
                throw AirlockException.invalid("the WebSocket upgrade failed: send a valid WebSocket handshake (version 13)");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The listings a node of a cluster joins with every other node's: the route, and the field of its array. */
    private static final Map<String, String> JOINED = Map.of("/v1/sandboxes", "sandboxes", "/v1/approvals", "approvals", "/v1/snapshots",
            "snapshots");

    /**
     * On the API port of a node of a cluster, for a listing of {@link #JOINED}: its answer with the
     * other serving nodes' items added (each node lists what it holds), and {@code partial} saying
     * what is missing when some node did not answer. Otherwise the answer as it is.
     */
    private java.util.function.UnaryOperator<tools.jackson.databind.node.ObjectNode> joined(HttpServletRequest req, Match m, Client client,
                                                                                           String via) {
        NodeRouting routing = service.routing();
        String field = JOINED.get(m.template());
        if (peerPort || routing == null || field == null || !req.getMethod().equals("GET")) {
            return java.util.function.UnaryOperator.identity();
        }
        return answer -> {
            NodeRouting.Answers others = routing.askOthers(req, client.name(), via);
            tools.jackson.databind.node.ArrayNode items = (tools.jackson.databind.node.ArrayNode) answer.get(field);
            for (byte[] body : others.bodies()) {
                try {
                    Json.MAPPER.readTree(body).path(field).forEach(items::add);
                } catch (tools.jackson.core.JacksonException e) {
                    LOG.warn("a node's answer to {} was not JSON: {}", m.template(), e.getMessage());
                }
            }
            if (field.equals("sandboxes") && req.getParameter("label") == null) {
                // what a node that is down held: lost with it, listed so until it returns (it reaps them then)
                for (NodeRouting.Lost lost : routing.lost(client.name())) {
                    items.addObject().put("id", lost.sandbox()).put("node", lost.node()).put("state", "lost").put("owner", client.name())
                            .put("message", lost.message());
                }
            }
            if (others.partial() != null) {
                answer.put("partial", others.partial());
            }
            return answer;
        };
    }

    /**
     * Where a create goes: a node that offers its profile's tier (docs/cluster.md, "Placement"). One
     * whose profile this node does not know stays here (the refusal is this node's to give); a
     * sandbox from a snapshot is made by its fork, on the snapshot's node.
     */
    private NodeRouting.Peer placeCreate(NodeRouting routing, HttpServletRequest req, Client client) throws IOException {
        tools.jackson.databind.JsonNode body;
        try {
            body = Json.MAPPER.readTree(RestCall.body(req));
        } catch (tools.jackson.core.JacksonException e) {
            return null;
        }
        if (body == null || !body.isObject()) {
            return null;
        }
        String name = body.hasNonNull("profile") ? body.path("profile").asString() : client.profiles().isEmpty() ? null : client.profiles().getFirst();
        dev.airlock.server.policy.Profile profile = name == null ? null : service.policy().profiles().get(name);
        if (profile == null) {
            return null;
        }
        return routing.place(profile.isolation() == null ? null : profile.isolation().id());
    }

    private static CommandApi.Request request(Client client, String via, String endpoint, Operation operation, String sandbox, String digest,
                                              CommandApi.Repeats repeats) {
        return new CommandApi.Request(client, via, via, endpoint, operation, sandbox, digest, null, repeats);
    }

    /**
     * What a read of the console's refresh repeats: its pages poll (a sandbox's page asks for the
     * sandbox, its processes and its egress every second) and mark those reads with {@value
     * #POLL_HEADER}, so they are folded per client and sandbox for {@link #POLLED_READS_WINDOW}.
     * Anything else through the console (a page opened, a download, a change, a terminal's attach)
     * is recorded one by one; null then.
     */
    private static CommandApi.Repeats polled(HttpServletRequest req, String template, Client client, String via, String sandbox) {
        boolean refresh = req.getMethod().equals("GET") && POLLED_READS.contains(template) && req.getHeader("Upgrade") == null
                && "1".equals(req.getHeader(POLL_HEADER));
        return refresh && via.equals(ConsoleSessions.VIA)
                ? new CommandApi.Repeats(via + " poll " + client.name() + " " + sandbox, POLLED_READS_WINDOW) : null;
    }

    /**
     * The digest of a request's arguments (query string and JSON body) for its audit record. The
     * body is read here and kept for the handler; a file upload's content is not read (its size
     * is in the file record).
     */
    private static String argsDigest(HttpServletRequest req, RestRoute route) throws IOException {
        byte[] body = new byte[0];
        // a file upload and a request to a preview port stream their bodies: neither is read here
        boolean upload = route != null && ((route.method().equals("PUT") && route.template().endsWith("/files"))
                || route.template().endsWith(RestRoute.REST));
        if (!upload && (req.getMethod().equals("POST") || req.getMethod().equals("PUT"))) {
            body = RestCall.body(req);
            req.setAttribute(RestCall.BODY, body);
        }
        String query = req.getQueryString() == null ? "" : req.getQueryString();
        byte[] q = query.getBytes(StandardCharsets.UTF_8);
        byte[] args = new byte[q.length + 1 + body.length];
        System.arraycopy(q, 0, args, 0, q.length);
        args[q.length] = '\n';
        System.arraycopy(body, 0, args, q.length + 1, body.length);
        return Audit.digest(args);
    }

    /** A path no route has, as the audit log files it: long segments (ids, garbage) cut to {@code {...}}. */
    private static String unmatched(List<String> parts) {
        StringBuilder b = new StringBuilder();
        for (String p : parts) {
            b.append('/').append(p.length() > 32 ? "{...}" : p);
        }
        return b.isEmpty() ? "/" : b.toString();
    }

    /** An error body; a refusal's also names the control and the rule that made it. */
    private static void error(HttpServletResponse resp, int status, String code, String message, AirlockException e) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(JsonViews.error(code, message, e instanceof Refused r ? r.refusal() : null));
    }

    static String code(Kind kind) {
        return switch (kind) {
            case INVALID_ARGUMENT -> "invalid_argument";
            case NOT_FOUND -> "not_found";
            case CONFLICT -> "conflict";
            case PERMISSION_DENIED -> "forbidden";
            case LIMIT_EXCEEDED -> "quota_exceeded";
            case TOO_LARGE -> "too_large";
            case GONE -> "gone";
            case UNAVAILABLE -> "unavailable";
            case INTERNAL -> "internal";
        };
    }
}
