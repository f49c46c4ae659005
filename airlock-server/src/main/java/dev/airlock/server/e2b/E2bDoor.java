package dev.airlock.server.e2b;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.audit.Audit;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.command.NodeRouting;
import dev.airlock.server.control.Refused;
import dev.airlock.server.http.BodyReader;
import dev.airlock.server.http.HttpStatus;
import dev.airlock.server.policy.Caller;
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

/**
 * The E2B door's one servlet (docs/e2b.md). A request that names a sandbox in {@code E2b-Sandbox-Id}
 * is for that sandbox's daemon ({@link Envd}), authenticated by the sandbox's access token; any
 * other is for the control plane ({@link E2bSandboxes}), authenticated by the E2B API key. Either
 * way the client found is asked about the request's operation like any other door's, and its
 * commands run through every control.
 *
 * <p>On a node of a cluster the door's requests reach every node's sandboxes (docs/cluster.md,
 * "The E2B door"): one on a sandbox another node holds, and a create placed on another node, is
 * sent to that node's peer port, under {@link NodeRouting#E2B_DOOR}, where this same servlet
 * serves it for the client the node's signature names; a listing joins every node's.
 */
public final class E2bDoor extends HttpServlet {

    private static final Logger LOG = LoggerFactory.getLogger(E2bDoor.class);
    /** The door's name in audit records and callers. */
    static final String VIA = "e2b";
    /** The port of envd in a sandbox, as the SDKs address it. */
    static final String ENVD_PORT = "49983";
    /** The port of the code interpreter in a sandbox, as the SDKs address it. */
    static final String INTERPRETER_PORT = "49999";
    /** The most one upload (POST /files) may hold: the default file size limit of a sandbox. */
    public static final long MAX_UPLOAD = 64L << 20;
    /** The most a control-plane or unary request body may hold. */
    static final int MAX_BODY = 1 << 20;

    private final CommandApi service;
    private final E2bKeys keys;
    private final E2bSandboxes sandboxes;
    private final Envd envd;
    private final E2bInterpreter interpreter;

    public E2bDoor(CommandApi service, java.time.Duration maxTtl) {
        this.service = service;
        NodeRouting routing = service.routing();
        this.keys = new E2bKeys(service::policy, routing == null ? null : routing.key("e2b-access-token"));
        this.sandboxes = new E2bSandboxes(keys, maxTtl, service::policy);
        this.envd = new Envd();
        this.interpreter = new E2bInterpreter();
    }

    /** The E2B API key of an Airlock token: {@code e2b_} and the token without its {@code alk_} prefix. */
    public static String apiKey(String token) {
        return E2bKeys.apiKey(token);
    }

    /** One request, once its client is known: what a handler asks the service through. */
    final class Call {
        final HttpServletRequest req;
        final HttpServletResponse resp;
        final Client client;
        /** The path the door serves: the request's, less the peer port's place for the door when another node sent it on. */
        final String path;
        /** Whether another node's door had the request and sent it on: this node's own answer then, never joined or sent on. */
        final boolean forwarded;
        private final String endpoint;
        private final String sandbox;
        private byte[] body;
        private Caller caller;

        Call(HttpServletRequest req, HttpServletResponse resp, Client client, String endpoint, String sandbox) {
            this.req = req;
            this.resp = resp;
            this.client = client;
            this.path = path(req);
            this.forwarded = isForwarded(req);
            this.endpoint = endpoint;
            this.sandbox = sandbox;
        }

        /** The body, read once within {@link #MAX_BODY}. */
        byte[] body() throws IOException {
            if (body == null) {
                body = BodyReader.read(req, MAX_BODY, "request body is over the E2B door's limit of " + MAX_BODY + " bytes");
            }
            return body;
        }

        /**
         * Asks the service whether this request's operation is granted (recording the request and
         * the decision, with the digest of its query and body); throws the refusal. Once per request,
         * or once per operation of a request that is two in Airlock (a fork: a snapshot, then a
         * create), each then recorded and decided: the commands after it run under the last.
         */
        void authorize(Operation operation) throws IOException {
            authorize(operation, null);
        }

        /** As {@link #authorize(Operation)}, the request folded on the audit log with others of {@code repeats}' source. */
        void authorize(Operation operation, CommandApi.Repeats repeats) throws IOException {
            byte[] args = (req.getQueryString() == null ? "" : req.getQueryString()).getBytes(StandardCharsets.UTF_8);
            // an upload's content is not read here (its size is in the file record)
            boolean streamsItsBody = req.getMethod().equals("POST") && path.equals("/files");
            byte[] read;
            try {
                read = streamsItsBody ? new byte[0] : body();
            } catch (AirlockException e) {
                undecided(); // a body that could not be read (too large, too slow): still on the log, then refused
                throw e;
            }
            byte[] all = new byte[args.length + 1 + read.length];
            System.arraycopy(args, 0, all, 0, args.length);
            all[args.length] = '\n';
            System.arraycopy(read, 0, all, args.length + 1, read.length);
            caller = service.authorize(new CommandApi.Request(client, VIA, VIA, endpoint, operation, sandbox, Audit.digest(all), null, repeats));
        }

        /** Carries out {@code command} as the authorized caller. */
        <R> R execute(Command<R> command) {
            if (caller == null) {
                throw new IllegalStateException("a command before the request was authorized");
            }
            return service.execute(caller, command);
        }

        void send(int status, tools.jackson.databind.JsonNode json) throws IOException {
            resp.setStatus(status);
            resp.setContentType("application/json");
            resp.getOutputStream().write(json.toString().getBytes(StandardCharsets.UTF_8));
        }

        /**
         * On a node of a cluster, when this call came to this node's own door: every other serving
         * node's answers to the same {@code GET} through its door (a listing joins them); null otherwise.
         */
        NodeRouting.Answers others() {
            NodeRouting routing = service.routing();
            return routing == null || forwarded ? null : routing.askOthers(req, client.name(), NodeRouting.E2B_VIA);
        }

        /** Records a request no route has, so the audit log has every request. */
        void undecided() {
            service.recordUndecided(new CommandApi.Request(client, VIA, VIA, endpoint, null, sandbox, null, null, null));
        }
    }

    /** The path the door serves: the request's, after the peer port's place for the door ({@link NodeRouting#E2B_DOOR}) there. */
    static String path(HttpServletRequest req) {
        String path = req.getRequestURI().substring(req.getContextPath().length() + req.getServletPath().length());
        return path.isEmpty() ? "/" : path;
    }

    /**
     * Whether the request came to a node's peer port, sent on by another node's door: the servlet
     * is mapped there under {@link NodeRouting#E2B_DOOR}, and at the root of its own port.
     */
    private static boolean isForwarded(HttpServletRequest req) {
        return !req.getServletPath().isEmpty();
    }

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String sandbox = req.getHeader("E2b-Sandbox-Id");
        boolean daemon = sandbox != null;
        String endpoint = req.getMethod() + " " + (daemon ? "envd " : "") + template(path(req));
        try {
            if (isForwarded(req)) {
                forwarded(req, resp, sandbox, endpoint);
            } else if (daemon) {
                daemon(req, resp, sandbox, endpoint);
            } else {
                controlPlane(req, resp, endpoint);
            }
        } catch (UncheckedIOException e) {
            LOG.debug("{}: the client went away: {}", endpoint, e.getMessage());
        } catch (AirlockException e) {
            if (!resp.isCommitted()) {
                if (daemon && isRpc(req)) {
                    ConnectRpc.fail(resp, e);
                } else {
                    error(resp, status(e), message(e));
                }
            }
            if (e.kind() == Kind.INTERNAL) {
                LOG.warn("{} failed: {}", endpoint, e.getMessage(), e);
            }
        } catch (RuntimeException e) {
            LOG.error("{} failed", endpoint, e);
            if (!resp.isCommitted()) {
                error(resp, 500, "internal error: " + e);
            }
        }
    }

    private void controlPlane(HttpServletRequest req, HttpServletResponse resp, String endpoint) throws IOException {
        String key = req.getHeader("X-API-Key");
        Client client = keys.client(key).orElse(null);
        if (client == null) {
            service.refuseUnauthenticated(VIA, VIA, endpoint, req.getRemoteAddr(), key != null);
            error(resp, 401, key == null
                    ? "missing API key: set E2B_API_KEY to e2b_ and your Airlock token without its alk_ prefix (airlock e2b env prints it)"
                    : "wrong API key: an E2B API key here is e2b_ followed by an Airlock client's token without its alk_ prefix"
                    + " (airlock e2b env prints it)");
            return;
        }
        Call c = new Call(req, resp, client, endpoint, E2bSandboxes.sandboxOf(path(req)));
        NodeRouting routing = service.routing();
        if (routing != null && sentOn(routing, c)) {
            return;
        }
        sandboxes.serve(c);
    }

    /**
     * On a node of a cluster: sends a control-plane request to the node that must carry it out when
     * that is another (the node that holds the sandbox it names; for a create, the node placement
     * chooses for its template's profile), which authorizes, records and carries it out; true when
     * sent. A create placed on a node that cannot be reached is made here.
     */
    private boolean sentOn(NodeRouting routing, Call c) throws IOException {
        String id = E2bSandboxes.sandboxOf(c.path);
        NodeRouting.Peer to;
        try {
            if (id != null) {
                to = routing.ownerOf(id, c.client.name());
            } else if (c.req.getMethod().equals("POST") && E2bSandboxes.isSandboxes(c.path)) {
                dev.airlock.server.policy.Profile profile = sandboxes.profileOf(c.client, c.body());
                to = profile == null ? null : routing.place(profile.isolation() == null ? null : profile.isolation().id());
            } else {
                return false;
            }
        } catch (AirlockException e) {
            c.undecided();   // lost with its node, or a body over the bound: on the log, then refused
            throw e;
        }
        if (to == null) {
            return false;
        }
        try {
            routing.forward(to, c.req, c.resp, id == null ? c.body() : null, c.client.name(), NodeRouting.E2B_VIA);
            return true;
        } catch (NodeRouting.Unreached e) {
            if (id != null) {
                throw e;
            }
            LOG.info("E2B create placed on node '{}' is made here: {}", to.name(), e.getMessage());
            return false;
        }
    }

    /**
     * A request another node's E2B door sent on to this node's peer port: the client is the one the
     * node's signature (the cluster's secret) names, never one of a key or token, and the request is
     * this node's to carry out.
     */
    private void forwarded(HttpServletRequest req, HttpServletResponse resp, String sandbox, String endpoint) throws IOException {
        NodeRouting routing = service.routing();
        String name = routing == null || !NodeRouting.E2B_VIA.equals(req.getHeader(NodeRouting.VIA_HEADER)) ? null : routing.forwardedClient(req);
        Client client = name == null ? null : service.policy().clients().get(name);
        if (client == null) {
            service.refuseUnauthenticated(VIA, VIA, endpoint, req.getRemoteAddr(), req.getHeader(NodeRouting.NODE_HEADER) != null);
            error(resp, 401, "this is a node's peer port: it takes only calls of the cluster's nodes, signed with the cluster's secret,"
                    + " and no client's key or token; E2B's SDKs call a node's E2B door");
            return;
        }
        // which node the client reached, on this node's audit log (the name is in what the cluster's secret signed)
        String from = endpoint + " from node " + req.getHeader(NodeRouting.NODE_HEADER).split(" ", 2)[0];
        if (sandbox != null) {
            daemon(req, resp, client, sandbox, from);
        } else {
            sandboxes.serve(new Call(req, resp, client, from, E2bSandboxes.sandboxOf(path(req))));
        }
    }

    private void daemon(HttpServletRequest req, HttpServletResponse resp, String sandbox, String endpoint) throws IOException {
        // envd's calls carry the access token as X-Access-Token; the code interpreter's context calls only as the traffic token
        String token = req.getHeader("X-Access-Token") != null ? req.getHeader("X-Access-Token") : req.getHeader("E2B-Traffic-Access-Token");
        Client client = keys.clientOfAccessToken(sandbox, token).orElse(null);
        if (client == null) {
            // the same answer whether the sandbox exists or not: a token is what tells
            service.refuseUnauthenticated(VIA, VIA, endpoint, req.getRemoteAddr(), token != null);
            throw new AirlockException(Kind.PERMISSION_DENIED, "missing or wrong X-Access-Token for sandbox " + Json.printable(sandbox, 64)
                    + ": connect to the sandbox with the SDK (Sandbox.connect), which gets its access token from the API");
        }
        NodeRouting routing = service.routing();
        NodeRouting.Peer owner;
        try {
            owner = routing == null ? null : routing.ownerOf(sandbox, client.name());
        } catch (AirlockException e) {
            service.recordUndecided(new CommandApi.Request(client, VIA, VIA, endpoint, null, sandbox, null, null, null));
            throw e;   // lost with its node
        }
        if (owner != null) {
            routing.forward(owner, req, resp, null, client.name(), NodeRouting.E2B_VIA);
            return;
        }
        daemon(req, resp, client, sandbox, endpoint);
    }

    /** A request to the daemon of a sandbox this node holds, once its client is known. */
    private void daemon(HttpServletRequest req, HttpServletResponse resp, Client client, String sandbox, String endpoint) throws IOException {
        String port = req.getHeader("E2b-Sandbox-Port");
        if (path(req).equals("/health") && req.getMethod().equals("GET")) {
            // whether the sandbox's daemon is there, as envd's health says it: 204, or 502 once the sandbox is gone
            resp.setStatus(service.live(sandbox) ? 204 : 502);
            return;
        }
        if (INTERPRETER_PORT.equals(port)) {
            interpreter.serve(new Call(req, resp, client, endpoint, sandbox), sandbox);
            return;
        }
        if (port != null && !port.equals(ENVD_PORT)) {
            throw unsupported("port " + Json.printable(port, 16) + " of a sandbox is not served by Airlock's E2B door: only envd ("
                    + ENVD_PORT + ") and the code interpreter (" + INTERPRETER_PORT + "); a server in a sandbox is reached through a"
                    + " preview port (docs/rest-api.md)");
        }
        envd.serve(new Call(req, resp, client, endpoint, sandbox), sandbox);
    }

    /**
     * A path as the audit log files it: the segment after {@code sandboxes} is {@code {id}}, after
     * {@code contexts} {@code {context}}, and any other over 32 characters {@code {...}}, so that
     * requests to many sandboxes (or to made-up paths) are one endpoint.
     */
    static String template(String path) {
        StringBuilder b = new StringBuilder();
        String previous = "";
        for (String part : path.split("/", -1)) {
            if (b.length() > 0 || !part.isEmpty()) {
                b.append('/');
            }
            b.append(previous.equals("sandboxes") ? "{id}" : previous.equals("contexts") ? "{context}" : part.length() > 32 ? "{...}"
                    : Json.printable(part, 32));
            previous = part;
        }
        return b.isEmpty() ? "/" : b.toString();
    }

    /** A call the door does not serve: a clear refusal, never a hang. */
    static AirlockException unsupported(String message) {
        return new Unsupported(message);
    }

    /** A refusal of something the E2B door does not implement: 501 on the control plane, {@code unimplemented} in Connect. */
    static final class Unsupported extends AirlockException {
        Unsupported(String message) {
            super(Kind.INVALID_ARGUMENT, message);
        }
    }

    private static boolean isRpc(HttpServletRequest req) {
        String type = req.getContentType();
        return type != null && (type.startsWith(ConnectRpc.UNARY) || type.startsWith(ConnectRpc.STREAM)) && !path(req).equals("/files");
    }

    private static int status(AirlockException e) {
        if (e instanceof Unsupported) {
            return 501;
        }
        if (e instanceof BodyReader.TooSlow) {
            return 408;
        }
        return HttpStatus.of(e.kind());
    }

    /** The message of a refusal names the control and rule that made it, as every door's does. */
    static String message(AirlockException e) {
        return e instanceof Refused r && r.refusal() != null
                ? e.getMessage() + " (Airlock control " + r.refusal().control() + ", rule " + r.refusal().rule() + ")"
                : e.getMessage();
    }

    /** E2B's error body: {@code {"code": <status>, "message": ...}}. */
    static void error(HttpServletResponse resp, int status, String message) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(Json.object().put("code", status).put("message", message).toString().getBytes(StandardCharsets.UTF_8));
    }
}
