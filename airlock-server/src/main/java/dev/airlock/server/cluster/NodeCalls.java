package dev.airlock.server.cluster;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Printable;
import dev.airlock.server.command.NodeRouting;
import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.databind.JsonNode;
import jakarta.servlet.http.HttpServletResponse;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * The calls between the nodes of a cluster (docs/cluster.md, "Between nodes"). A node forwards a
 * client's request to the node that holds its sandbox, or to the node a create is placed on, over
 * TLS to that node's peer port, trusting only the certificate whose fingerprint the node published
 * in the database, and signs each call with the cluster's secret: an HMAC-SHA256 over the node's
 * name, the time, the method, the target, the client and its door. The peer port accepts nothing
 * else (no client's token), and the API port accepts no node's call.
 *
 * <p>Placement is a best-of-2 choice: of the nodes that are up and offer the tier,
 * two at random, the one with more free capacity (capacity less the places it holds, which count
 * the creates in flight on every node, less the creates this node is forwarding to it now).
 */
public final class NodeCalls implements NodeRouting, dev.airlock.server.snapshot.SnapshotStore.Source {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(NodeCalls.class);

    /** How far a node's call's time may be from this node's: calls older or newer are refused. */
    static final Duration FRESH = Duration.ofSeconds(60);
    private static final Duration CONNECT = Duration.ofSeconds(5);
    /** How long a snapshot's record, or one of its blobs, may take to come from the node that holds it. */
    private static final Duration SNAPSHOT_CALL = Duration.ofMinutes(5);
    /**
     * Request headers a forward does not copy: the client's credentials (REST's, the console's and
     * the E2B door's), the hop's own, and the node headers (set anew).
     */
    private static final Set<String> NOT_FORWARDED = Set.of("host", "authorization", "cookie", "x-api-key", "x-access-token",
            "e2b-traffic-access-token", "connection", "content-length",
            "transfer-encoding", "upgrade", "expect", "keep-alive", "te", "trailer", "proxy-authorization", "proxy-connection",
            "http2-settings", NODE_HEADER.toLowerCase(Locale.ROOT), CLIENT_HEADER.toLowerCase(Locale.ROOT), VIA_HEADER.toLowerCase(Locale.ROOT));
    /** Response headers a forward does not copy: the hop's own. */
    private static final Set<String> NOT_RETURNED = Set.of("connection", "transfer-encoding", "keep-alive", "te", "trailer", "upgrade",
            ":status");

    private final ClusterMembership membership;
    private final byte[] secret;
    private final Predicate<String> heldHere;
    private final Map<String, HttpClient> clients = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> placing = new ConcurrentHashMap<>();

    /**
     * @param heldHere whether this node holds a sandbox (asked before the database: a request on one
     *                 of this node's own sandboxes costs no query)
     */
    public NodeCalls(ClusterMembership membership, Predicate<String> heldHere) {
        this.membership = membership;
        this.secret = membership.secret();
        this.heldHere = heldHere;
    }

    @Override
    public Peer ownerOf(String id, String client) {
        if (heldHere.test(id)) {
            return null;
        }
        ClusterMembership.Member m = membership.owner(id);
        if (m == null || m.name().equals(membership.nodeName())) {
            return null;
        }
        if (m.state().equals("down") || m.state().equals("left")) {
            if (!client.equals(m.client())) {
                return null;
            }
            throw new AirlockException(Kind.GONE, "sandbox " + Printable.of(id) + " is lost: node '" + m.name() + "', which held it, is "
                    + m.state() + " (airlock cluster nodes); create another");
        }
        return new Peer(m.name(), m.peerAddress(), m.fingerprint());
    }

    @Override
    public Peer approvalOwner(String id) {
        return namedIn(id, "ap-", "approval", "the request that waited for it ended with that node");
    }

    @Override
    public Peer snapshotOwner(String id) {
        return namedIn(id, "snap-", "snapshot", "its files are on that node's host, and come back with it");
    }

    /**
     * The node named in {@code id} ({@code <prefix><node>-<hex>}) when it is another node of the
     * cluster; null when it is this one, names none, or names no node (this node then answers that
     * no such {@code what} exists). Throws GONE, saying {@code after}, when that node is down or gone.
     */
    private Peer namedIn(String id, String prefix, String what, String after) {
        int last = id.lastIndexOf('-');
        if (!id.startsWith(prefix) || last <= prefix.length()) {
            return null;
        }
        String node = id.substring(prefix.length(), last);
        if (node.equals(membership.nodeName())) {
            return null;
        }
        ClusterMembership.Member m = membership.member(node);
        if (m == null) {
            return null;
        }
        if (m.state().equals("down") || m.state().equals("left")) {
            throw new AirlockException(Kind.GONE, what + " " + Printable.of(id) + " is on node '" + node + "', which is " + m.state() + ": "
                    + after);
        }
        return new Peer(m.name(), m.peerAddress(), m.fingerprint());
    }

    @Override
    public Peer place(String tier) {
        List<ClusterMembership.Member> up;
        try {
            up = membership.candidates(tier);
        } catch (AirlockException e) {
            return null;   // the database does not answer: this node's create is refused, and says why
        }
        if (up.isEmpty()) {
            return null;   // no node offers it: this one answers why
        }
        // two different nodes at random (one when only one is up), the freer one wins
        ThreadLocalRandom random = ThreadLocalRandom.current();
        int i = random.nextInt(up.size());
        int j = up.size() == 1 ? i : (i + 1 + random.nextInt(up.size() - 1)) % up.size();
        ClusterMembership.Member best = free(up.get(j)) > free(up.get(i)) ? up.get(j) : up.get(i);
        return best.name().equals(membership.nodeName()) ? null : new Peer(best.name(), best.peerAddress(), best.fingerprint());
    }

    @Override
    public Peer forkPlace(String id, String client) {
        Peer holder = snapshotOwner(id);
        if (holder == null) {
            return null;   // this node's own, or none: this node answers
        }
        JsonNode held = held(holder, id, client);
        String tier = held.path("tier").isString() ? held.path("tier").asString() : null;
        if (held.path("memory").asBoolean(false)) {
            return holder;   // processes are restored where their checkpoint is
        }
        List<ClusterMembership.Member> up;
        try {
            up = membership.candidates(tier);
        } catch (AirlockException e) {
            return holder;
        }
        if (up.stream().anyMatch(m -> m.name().equals(holder.name()) && free(m) > 0)) {
            return holder;   // the files are there: nothing moves
        }
        return place(tier);
    }

    @Override
    public boolean elsewhere(String id) {
        try {
            return snapshotOwner(id) != null;
        } catch (AirlockException e) {
            return true;   // another node's, which is down: describe says so
        }
    }

    @Override
    public dev.airlock.server.command.Command.HeldSnapshot describe(String id, String owner) {
        Peer holder = snapshotOwner(id);
        if (holder == null) {
            throw new AirlockException(Kind.NOT_FOUND, "no snapshot '" + Printable.of(id) + "': list yours with GET /v1/snapshots");
        }
        JsonNode held = held(holder, id, owner);
        java.util.Base64.Decoder b64 = java.util.Base64.getDecoder();
        return new dev.airlock.server.command.Command.HeldSnapshot(b64.decode(held.path("record").asString()),
                b64.decode(held.path("manifest").asString()));
    }

    @Override
    public InputStream blob(String id, String owner, String digest) throws IOException {
        Peer holder = snapshotOwner(id);
        if (holder == null) {
            throw new AirlockException(Kind.NOT_FOUND, "no snapshot '" + Printable.of(id) + "'");
        }
        HttpResponse<InputStream> r = snapshotCall(holder, SNAPSHOTS + "/" + id + "/blobs/" + digest, owner, HttpResponse.BodyHandlers.ofInputStream());
        if (r.statusCode() != 200) {
            String body;
            try (InputStream in = r.body()) {
                body = new String(in.readNBytes(4096), StandardCharsets.UTF_8);
            }
            throw answered(holder, r.statusCode(), body);
        }
        return r.body();
    }

    /** What node {@code holder} says of snapshot {@code id} of {@code client}: its record, manifest (both base64), {@code memory} and tier. */
    private JsonNode held(Peer holder, String id, String client) {
        HttpResponse<byte[]> r;
        try {
            r = snapshotCall(holder, SNAPSHOTS + "/" + id, client, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw unreached(holder, "holds the snapshot", e);
        }
        String body = new String(r.body(), StandardCharsets.UTF_8);
        if (r.statusCode() != 200) {
            throw answered(holder, r.statusCode(), body);
        }
        return dev.airlock.server.wire.Json.MAPPER.readTree(body);
    }

    private <T> HttpResponse<T> snapshotCall(Peer to, String target, String client, HttpResponse.BodyHandler<T> handler) throws IOException {
        try {
            return http(to).send(nodeCall(to, "GET", target, client, "rest", HttpRequest.BodyPublishers.noBody()).timeout(SNAPSHOT_CALL).build(),
                    handler);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while asking node '" + to.name() + "' for a snapshot");
        }
    }

    /** A refusal of node {@code from}'s: its status's kind, with its message (an error body's {@code message}, else the body). */
    private static AirlockException answered(Peer from, int status, String body) {
        String message = body;
        try {
            JsonNode n = dev.airlock.server.wire.Json.MAPPER.readTree(body);
            message = n.path("error").path("message").isString() ? n.path("error").path("message").asString() : n.path("message").asString(body);
        } catch (RuntimeException e) {
            // not JSON: the body as it is
        }
        Kind kind = switch (status) {
            case 404 -> Kind.NOT_FOUND;
            case 409 -> Kind.CONFLICT;
            case 410 -> Kind.GONE;
            default -> Kind.UNAVAILABLE;
        };
        return new AirlockException(kind, "node '" + from.name() + "', which holds the snapshot, answered " + status + ": "
                + Printable.of(message, 500));
    }

    /** A node's free capacity as this node sees it: what the database counts, less the creates this node is forwarding there. */
    private long free(ClusterMembership.Member m) {
        AtomicInteger forwarding = placing.get(m.name());
        return (long) m.capacity() - m.places() - (forwarding == null ? 0 : forwarding.get());
    }

    @Override
    public org.eclipse.jetty.websocket.api.Session.Listener relay(Peer to, HttpServletRequest req, String client, String via) {
        String target = target(req, via);
        long now = System.currentTimeMillis();
        String signature = membership.nodeName() + " " + now + " " + mac(membership.nodeName(), now, "GET", target, client, via);
        URI uri = URI.create("wss://" + to.address() + target);
        return new TerminalRelay(to.name(), listener -> http(to).newWebSocketBuilder().connectTimeout(CONNECT)
                .header(NODE_HEADER, signature).header(CLIENT_HEADER, client).header(VIA_HEADER, via).buildAsync(uri, listener));
    }

    @Override
    public List<Lost> lost(String client) {
        try {
            return membership.lost(client);
        } catch (AirlockException e) {
            return List.of();   // the database does not answer: the listing says it is this node's own only
        }
    }

    @Override
    public Answers askOthers(HttpServletRequest req, String client, String via) {
        List<ClusterMembership.Member> others;
        try {
            others = membership.serving(null).stream().filter(m -> !m.name().equals(membership.nodeName())).toList();
        } catch (AirlockException e) {
            return new Answers(List.of(), "the cluster's database does not answer, so the other nodes are not known: this node's own only");
        }
        String target = target(req, via);
        List<java.util.concurrent.CompletableFuture<HttpResponse<byte[]>>> calls = new ArrayList<>();
        for (ClusterMembership.Member m : others) {
            Peer to = new Peer(m.name(), m.peerAddress(), m.fingerprint());
            HttpRequest.Builder b = signed(to, req, target, client, via).timeout(ASK).GET();
            calls.add(http(to).sendAsync(b.build(), HttpResponse.BodyHandlers.ofByteArray()));
        }
        List<byte[]> bodies = new ArrayList<>();
        List<String> unanswered = new ArrayList<>();
        for (int i = 0; i < calls.size(); i++) {
            try {
                HttpResponse<byte[]> r = calls.get(i).get();
                if (r.statusCode() == 200) {
                    bodies.add(r.body());
                } else {
                    unanswered.add(others.get(i).name());
                }
            } catch (java.util.concurrent.ExecutionException e) {
                unanswered.add(others.get(i).name());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw AirlockException.unavailable("interrupted while asking the cluster's other nodes");
            }
        }
        return new Answers(bodies, NodeRouting.partial(unanswered.stream().map(n -> "node " + n).toList()));
    }

    private static String target(HttpServletRequest req) {
        return req.getRequestURI() + (req.getQueryString() == null ? "" : "?" + req.getQueryString());
    }

    /** Where on a peer port a request that came through door {@code via} goes: the E2B door's under its own place, the rest as it came. */
    private static String target(HttpServletRequest req, String via) {
        return (via.equals(E2B_VIA) ? E2B_DOOR : "") + target(req);
    }

    /** Whether a request sent on is a create, so that it counts against its node's free capacity while it is under way. */
    private static boolean isCreate(HttpServletRequest req, String via) {
        String path = req.getRequestURI();
        return req.getMethod().equals("POST") && (via.equals(E2B_VIA) ? path.equals("/sandboxes") || path.equals("/v2/sandboxes")
                : path.equals("/v1/sandboxes"));
    }

    /** A call to {@code to}: the request's own headers (not its credentials), and this node's signature for {@code client} and {@code via}. */
    private HttpRequest.Builder signed(Peer to, HttpServletRequest req, String target, String client, String via) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("https://" + to.address() + target));
        for (String name : Collections.list(req.getHeaderNames())) {
            if (!NOT_FORWARDED.contains(name.toLowerCase(Locale.ROOT))) {
                for (String value : Collections.list(req.getHeaders(name))) {
                    b.header(name, value);
                }
            }
        }
        long now = System.currentTimeMillis();
        b.header(NODE_HEADER, membership.nodeName() + " " + now + " " + mac(membership.nodeName(), now, req.getMethod(), target, client, via));
        b.header(CLIENT_HEADER, client);
        b.header(VIA_HEADER, via);
        return b;
    }

    @Override
    public void forward(Peer to, HttpServletRequest req, HttpServletResponse resp, byte[] body, String client, String via) throws IOException {
        HttpRequest.Builder b = signed(to, req, target(req, via), client, via);
        b.method(req.getMethod(), body != null ? HttpRequest.BodyPublishers.ofByteArray(body) : streamed(req));
        AtomicInteger inFlight = placing.computeIfAbsent(to.name(), k -> new AtomicInteger());
        boolean create = isCreate(req, via);
        if (create) {
            inFlight.incrementAndGet();
        }
        HttpResponse<InputStream> answer;
        try {
            answer = http(to).send(b.build(), HttpResponse.BodyHandlers.ofInputStream());
        } catch (IOException e) {
            throw unreached(to, create ? "was chosen for this create" : "holds what this request names", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while forwarding to node '" + to.name() + "'");
        } finally {
            if (create) {
                inFlight.decrementAndGet();
            }
        }
        try (InputStream in = answer.body()) {
            resp.setStatus(answer.statusCode());
            answer.headers().map().forEach((name, values) -> {
                if (!NOT_RETURNED.contains(name.toLowerCase(Locale.ROOT))) {
                    values.forEach(v -> resp.addHeader(name, v));
                }
            });
            OutputStream out = resp.getOutputStream();
            byte[] buf = new byte[16 * 1024];
            for (int n; (n = in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
                if (in.available() == 0) {
                    out.flush();   // a stream (an exec's lines) reaches the client as it comes
                }
            }
        }
    }

    /**
     * Why node {@code to} (which {@code role}) could not be called: {@link Unreached} when the call
     * was not sent (the connection refused or timed out, or not the pinned certificate), so that it
     * may go elsewhere; UNAVAILABLE otherwise.
     */
    private static AirlockException unreached(Peer to, String role, IOException e) {
        String why = "cannot reach node '" + to.name() + "' (which " + role + ") at its peer port " + to.address()
                + " over TLS with its published certificate: " + e + " (airlock cluster nodes shows its state)";
        boolean unsent = e instanceof java.net.ConnectException || e instanceof java.net.http.HttpConnectTimeoutException
                || e instanceof javax.net.ssl.SSLHandshakeException;
        return unsent ? new Unreached(why) : AirlockException.unavailable(why);
    }

    /** A JSON {@code POST} of this node's own to {@code target} on {@code to}'s peer port, signed for {@code client} and {@code via}. */
    private HttpRequest.Builder nodePost(Peer to, String target, String client, String via, byte[] body) {
        return nodeCall(to, "POST", target, client, via, HttpRequest.BodyPublishers.ofByteArray(body)).header("Content-Type", "application/json");
    }

    /** A call of this node's own to {@code target} on {@code to}'s peer port, signed for {@code client} and {@code via}. */
    private HttpRequest.Builder nodeCall(Peer to, String method, String target, String client, String via, HttpRequest.BodyPublisher body) {
        long now = System.currentTimeMillis();
        return HttpRequest.newBuilder(URI.create("https://" + to.address() + target))
                .header(NODE_HEADER, membership.nodeName() + " " + now + " " + mac(membership.nodeName(), now, method, target, client, via))
                .header(CLIENT_HEADER, client).header(VIA_HEADER, via).method(method, body);
    }

    @Override
    public byte[] callTool(Peer to, String client, String via, byte[] call, Duration timeout) {
        HttpRequest.Builder request = nodePost(to, TOOL_CALLS, client, via, call);
        HttpResponse<byte[]> answer;
        try {
            answer = http(to).send((timeout == null ? request : request.timeout(timeout)).build(), HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw unreached(to, "holds the sandbox or snapshot this tool call names, or was chosen for its sandboxes", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while node '" + to.name() + "' ran the tool call");
        }
        if (answer.statusCode() != 200) {
            throw AirlockException.unavailable("node '" + to.name() + "' answered the tool call with "
                    + answer.statusCode() + ": " + Printable.of(new String(answer.body(), StandardCharsets.UTF_8), 500));
        }
        return answer.body();
    }

    @Override
    public void sessionEnded(String node, String client, String session) {
        ClusterMembership.Member m;
        try {
            m = membership.member(node);
        } catch (AirlockException e) {
            LOG.warn("MCP session {} ended, and node '{}' made sandboxes for it: the cluster's database does not answer, so the node is"
                    + " not told (they end at their idle time)", session, node);
            return;
        }
        if (m == null || m.state().equals("down") || m.state().equals("left")) {
            return;   // what it made is lost with it, or gone
        }
        Peer to = new Peer(m.name(), m.peerAddress(), m.fingerprint());
        byte[] body = dev.airlock.server.wire.Json.object().put("session", session).toString().getBytes(StandardCharsets.UTF_8);
        try {
            HttpResponse<Void> r = http(to).send(nodePost(to, SESSION_ENDED, client, "mcp-http:" + session, body).timeout(ASK).build(),
                    HttpResponse.BodyHandlers.discarding());
            if (r.statusCode() != 204) {
                LOG.warn("node '{}' answered {} when told that MCP session {} ended: the sandboxes it made for it end at their idle time",
                        node, r.statusCode(), session);
            }
        } catch (IOException e) {
            LOG.warn("node '{}' could not be told that MCP session {} ended ({}): the sandboxes it made for it end at their idle time",
                    node, session, e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public byte[] key(String purpose) {
        return hmac("airlock-node-key/1\n" + purpose);
    }

    @Override
    public String nodeName() {
        return membership.nodeName();
    }

    @Override
    public List<Peer> others() {
        return membership.serving(null).stream().filter(m -> !m.name().equals(membership.nodeName()))
                .map(m -> new Peer(m.name(), m.peerAddress(), m.fingerprint())).toList();
    }

    /** The request's own body, streamed, its length kept when it has one (an upload). */
    private static HttpRequest.BodyPublisher streamed(HttpServletRequest req) {
        long length = req.getContentLengthLong();
        if (length == 0 || (length < 0 && req.getHeader("Transfer-Encoding") == null)) {
            return HttpRequest.BodyPublishers.noBody();
        }
        HttpRequest.BodyPublisher in = HttpRequest.BodyPublishers.ofInputStream(() -> {
            try {
                return req.getInputStream();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        return length > 0 ? HttpRequest.BodyPublishers.fromPublisher(in, length) : in;
    }

    /** One client per peer certificate: a node that restarts publishes a new one, and its old client is never used again. */
    private HttpClient http(Peer to) {
        if (clients.size() > 4 * ClusterMembership.MAX_NODES) {
            clients.clear();
        }
        return clients.computeIfAbsent(to.fingerprint(), fp -> HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(CONNECT).sslContext(NodeTls.pinnedClient(fp)).followRedirects(HttpClient.Redirect.NEVER).build());
    }

    @Override
    public String forwardedClient(HttpServletRequest req) {
        String header = req.getHeader(NODE_HEADER);
        String client = req.getHeader(CLIENT_HEADER);
        String via = req.getHeader(VIA_HEADER);
        if (header == null || client == null || via == null) {
            return null;
        }
        String[] parts = header.split(" ");
        if (parts.length != 3) {
            return null;
        }
        long at;
        try {
            at = Long.parseLong(parts[1]);
        } catch (NumberFormatException e) {
            return null;
        }
        if (Math.abs(System.currentTimeMillis() - at) > FRESH.toMillis()) {
            return null;
        }
        String expected = mac(parts[0], at, req.getMethod(), target(req), client, via);
        return MessageDigest.isEqual(expected.getBytes(StandardCharsets.US_ASCII), parts[2].getBytes(StandardCharsets.US_ASCII)) ? client : null;
    }

    /** The HMAC-SHA256, under the cluster's secret, of what a node's call says: who, when, what, for whom, through which door. */
    String mac(String node, long at, String method, String target, String client, String via) {
        return HexFormat.of().formatHex(hmac(String.join("\n", "airlock-node-call/1", node, Long.toString(at), method, target, client, via)));
    }

    /** The HMAC-SHA256 of {@code text} under the cluster's secret: what signs a node's call and derives the cluster's keys. */
    private byte[] hmac(String text) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(secret, "HmacSHA256"));
            return m.doFinal(text.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }
}
