package dev.airlock.egress;

import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.RequestApproval;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The egress proxy of one sandbox. It listens on a unix socket (the sandbox reaches it through
 * its agent, or by connecting to the socket directly: the same policy applies either way) and
 * speaks three protocols, told apart by the first byte: SOCKS5 (0x05: no authentication, CONNECT
 * only), HTTP CONNECT (a tunnel) and HTTP/1.1 absolute-form forward requests ({@code GET
 * http://host/path}). Every destination goes through {@link EgressRules}; the proxy connects to
 * exactly the address the rules approved and never resolves a name itself. A forward request is
 * the only one of its connection: nothing pipelined behind it is read.
 *
 * <p>One virtual thread per connection (two while relaying). Header bytes, handshake time, idle
 * time, connections open at once and bytes over the sandbox's life are all bounded. {@link
 * #updatePolicy} applies to new connections at once and closes open ones the new policy denies.
 *
 * <p>Inspected destinations: a connection to a destination a credential is bound to, or that a
 * {@link RequestApproval} inspects, carries HTTP only, one request per connection, read here before
 * anything goes upstream. HTTPS (CONNECT or SOCKS5) is intercepted: the sandbox's TLS ends here with
 * a certificate of the sandbox's own CA, and the request goes on over a new TLS connection whose
 * certificate and name are verified, so a secret only ever leaves for the bound, verified host.
 * A request an approval covers waits for the {@link RequestGate} with nothing sent upstream (not
 * even a TCP connection is made) and is answered 403 unless approved; an approved request gets the
 * credentials like any other. Other tunnels stay opaque.
 */
public final class EgressProxy implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(EgressProxy.class);
    private static final String TRACE_REFUSED = "credential: TRACE refused";
    /** The most of a refused request's body read (and dropped) so that the client gets to read the refusal. */
    private static final long MAX_DISCARDED_BODY = 1 << 20;

    /**
     * Timeouts and bounds that are not part of the policy.
     *
     * @param upstreamTls     verifies the upstream servers of intercepted (credential-bound or
     *                        approval-inspected) HTTPS connections; null for the JVM's default trust
     * @param approvalTimeout the longest a request waits for its {@link RequestGate}; a backstop for a
     *                        gate that never answers (the gate applies its own, shorter timeout), after
     *                        which the connection is cut and the gate's thread interrupted
     */
    public record Options(Duration connectTimeout, Duration handshakeTimeout, Duration idleTimeout, int maxHeaderBytes,
                          SSLContext upstreamTls, Duration approvalTimeout) {
        public static final Duration DEFAULT_APPROVAL_TIMEOUT = Duration.ofHours(1);
        public static final Options DEFAULTS = new Options(Duration.ofSeconds(10), Duration.ofSeconds(30), Duration.ofMinutes(5), 32 * 1024);

        public Options {
            approvalTimeout = approvalTimeout == null ? DEFAULT_APPROVAL_TIMEOUT : approvalTimeout;
        }

        public Options(Duration connectTimeout, Duration handshakeTimeout, Duration idleTimeout, int maxHeaderBytes) {
            this(connectTimeout, handshakeTimeout, idleTimeout, maxHeaderBytes, null, null);
        }

        public Options(Duration connectTimeout, Duration handshakeTimeout, Duration idleTimeout, int maxHeaderBytes, SSLContext upstreamTls) {
            this(connectTimeout, handshakeTimeout, idleTimeout, maxHeaderBytes, upstreamTls, null);
        }

        public Options withUpstreamTls(SSLContext tls) {
            return new Options(connectTimeout, handshakeTimeout, idleTimeout, maxHeaderBytes, tls, approvalTimeout);
        }

        public Options withApprovalTimeout(Duration timeout) {
            return new Options(connectTimeout, handshakeTimeout, idleTimeout, maxHeaderBytes, upstreamTls, timeout);
        }
    }

    private final String sandboxId;
    private final Path socketPath;
    private final ServerSocketChannel server;
    private final EgressListener listener;
    private final Options options;
    /** Null when the sandbox has no credentials and no request approvals: then nothing is ever intercepted. */
    private final Interception interception;
    private final RequestGate gate;
    private final Set<Connection> live = ConcurrentHashMap.newKeySet();
    private final AtomicInteger open = new AtomicInteger();
    /** Connections that passed the policy and hold one of its {@code maxConnections}. */
    private final AtomicInteger established = new AtomicInteger();
    private final AtomicLong bytes = new AtomicLong();
    private final Thread acceptor;
    private final Thread watchdog;
    private volatile EgressRules rules;
    private volatile boolean closed;

    private EgressProxy(String sandboxId, Path socketPath, ServerSocketChannel server, EgressRules rules, EgressListener listener, Options options,
                        Interception interception, RequestGate gate) {
        this.sandboxId = sandboxId;
        this.interception = interception;
        this.gate = gate;
        this.socketPath = socketPath;
        this.server = server;
        this.rules = rules;
        this.listener = listener;
        this.options = options;
        this.acceptor = Thread.ofVirtual().name("egress-accept-" + sandboxId).unstarted(this::acceptLoop);
        this.watchdog = Thread.ofVirtual().name("egress-watchdog-" + sandboxId).unstarted(this::watchLoop);
    }

    /**
     * Binds {@code socketPath} (which must not exist) and starts serving. The caller sets the
     * socket file's owner and mode.
     */
    public static EgressProxy start(String sandboxId, Path socketPath, EgressRules rules, EgressListener listener, Options options) throws IOException {
        return start(sandboxId, socketPath, rules, listener, options, List.of());
    }

    /**
     * As {@link #start(String, Path, EgressRules, EgressListener, Options)}, injecting {@code
     * credentials} into requests to their destinations. With any credential, the proxy makes the
     * sandbox's certificate authority ({@link #certificateAuthorityPem()}); its key stays in this
     * object and is dropped by {@link #close()}.
     */
    public static EgressProxy start(String sandboxId, Path socketPath, EgressRules rules, EgressListener listener, Options options,
                                    List<Credential> credentials) throws IOException {
        return start(sandboxId, socketPath, rules, listener, options, credentials, List.of(), RequestGate.DENY_ALL);
    }

    /**
     * As {@link #start(String, Path, EgressRules, EgressListener, Options, List)}, also holding each
     * request one of {@code approvals} covers until {@code gate} approves it (null: {@link
     * RequestGate#DENY_ALL}). With any credential or approval, the proxy makes the sandbox's
     * certificate authority.
     */
    public static EgressProxy start(String sandboxId, Path socketPath, EgressRules rules, EgressListener listener, Options options,
                                    List<Credential> credentials, List<RequestApproval> approvals, RequestGate gate) throws IOException {
        Interception interception;
        try {
            interception = Interception.create(sandboxId, credentials, approvals, options.upstreamTls());
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot set up TLS interception (credentials, request approvals) for " + sandboxId + ": " + e.getMessage(), e);
        }
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            server.bind(UnixDomainSocketAddress.of(socketPath), 64);
        } catch (IOException e) {
            server.close();
            if (interception != null) {
                interception.close();
            }
            throw e;
        }
        EgressProxy proxy = new EgressProxy(sandboxId, socketPath, server, rules, listener, options, interception,
                gate == null ? RequestGate.DENY_ALL : gate);
        proxy.acceptor.start();
        proxy.watchdog.start();
        return proxy;
    }

    public Path socketPath() {
        return socketPath;
    }

    public NetworkPolicy policy() {
        return rules.policy();
    }

    /**
     * The public certificate (PEM) of the sandbox's certificate authority, which the sandbox must
     * trust for intercepted HTTPS; empty when the sandbox has neither credentials nor request approvals.
     */
    public Optional<String> certificateAuthorityPem() {
        return interception == null ? Optional.empty() : Optional.of(interception.certificateAuthority().certificatePem());
    }

    /** For tests: the sandbox's CA certificate, or null. */
    java.security.cert.X509Certificate certificateAuthority() {
        return interception == null ? null : interception.certificateAuthority().certificate();
    }

    /** For tests: the sandbox's CA itself, or null. */
    SandboxCertificateAuthority sandboxCa() {
        return interception == null ? null : interception.certificateAuthority();
    }

    /** Connections relaying or being set up now. */
    public int openConnections() {
        return live.size();
    }

    /** Bytes relayed both ways so far. */
    public long bytesUsed() {
        return bytes.get();
    }

    /**
     * Replaces the policy. New connections see it at once; open connections that it denies (by
     * name, port, or the address they are connected to) are closed now.
     */
    public void updatePolicy(NetworkPolicy policy) {
        EgressRules next = rules.withPolicy(policy);
        rules = next;
        for (Connection c : live) {
            c.recheck(next);
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // closing anyway
        }
        acceptor.interrupt();
        watchdog.interrupt();
        for (Connection c : live) {
            c.cut("proxy closed");
        }
        if (interception != null) {
            interception.close();
        }
        try {
            Files.deleteIfExists(socketPath);
        } catch (IOException e) {
            LOG.debug("cannot remove {}: {}", socketPath, e.getMessage());
        }
    }

    private void acceptLoop() {
        while (!closed) {
            SocketChannel client;
            try {
                client = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("egress proxy of {} stopped accepting: {}", sandboxId, e.getMessage());
                }
                return;
            }
            // Handshakes in progress are bounded too, not just relaying connections.
            int limit = Math.max(16, rules.policy().maxConnections() * 2);
            if (open.incrementAndGet() > limit) {
                open.decrementAndGet();
                closeQuietly(client);
                continue;
            }
            Connection c = new Connection(client);
            live.add(c);
            Thread.ofVirtual().name("egress-" + sandboxId).start(c::run);
        }
    }

    private void watchLoop() {
        while (!closed) {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (Connection c : live) {
                // A person may take minutes to answer: only the approval timeout bounds the wait.
                if (c.awaitingApproval) {
                    if (now - c.approvalStarted > options.approvalTimeout().toNanos()) {
                        c.cut("approval timeout");
                    }
                } else if (c.relaying) {
                    if (now - c.lastActivity > options.idleTimeout().toNanos()) {
                        c.cut("idle timeout");
                    }
                } else if (now - c.started > options.handshakeTimeout().toNanos()) {
                    c.cut("handshake timeout");
                }
            }
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            // nothing to do
        }
    }

    /** Thrown to end a handshake with a reply already chosen. */
    private static final class Refused extends Exception {
        final int httpStatus;
        final int socksReply;
        final String rule;

        Refused(int httpStatus, int socksReply, String rule, String message) {
            super(message, null, false, false);
            this.httpStatus = httpStatus;
            this.socksReply = socksReply;
            this.rule = rule;
        }
    }

    private final class Connection {
        final SocketChannel client;
        final long started = System.nanoTime();
        final Instant startedAt = Instant.now();
        final ByteBuffer in;
        volatile long lastActivity = System.nanoTime();
        volatile boolean relaying;
        volatile String cutBy;
        volatile Socket upstream;
        String protocol = "unknown";
        String destination;
        int port;
        InetAddress address;
        String rule = "none";
        /** Passed the policy (and nothing refused since): something may go, or went, upstream. */
        boolean allowed;
        boolean holdsSlot;
        /** The host as the sandbox spelled it, and the rules that admitted it. */
        String requestedHost;
        EgressRules admittedBy;
        /** Null, {@link EgressRecord#APPROVED} or {@link EgressRecord#DENIED}. */
        String approval;
        volatile boolean awaitingApproval;
        volatile long approvalStarted;
        /** The thread blocked in the gate, to interrupt when the connection is cut. */
        volatile Thread waiter;
        /** Names of the credentials injected so far (never values). */
        final Set<String> injected = new LinkedHashSet<>();
        final AtomicLong up = new AtomicLong();
        final AtomicLong down = new AtomicLong();

        Connection(SocketChannel client) {
            this.client = client;
            this.in = ByteBuffer.allocate(options.maxHeaderBytes());
            this.in.flip();
        }

        void run() {
            try {
                handle();
            } catch (IOException e) {
                LOG.debug("egress connection of {} ended: {}", sandboxId, e.getMessage());
            } finally {
                closeQuietly(upstream);
                closeQuietly(client);
                live.remove(this);
                open.decrementAndGet();
                if (holdsSlot) {
                    established.decrementAndGet();
                }
                if (destination != null || !allowed) {
                    String recorded = cutBy != null && allowed ? rule + "; cut: " + cutBy : rule;
                    try {
                        listener.record(new EgressRecord(sandboxId, startedAt, protocol, destination, port,
                                address == null ? null : address.getHostAddress(), allowed, recorded, up.get(), down.get(),
                                Duration.ofNanos(System.nanoTime() - started), List.copyOf(injected), approval));
                    } catch (RuntimeException e) {
                        LOG.warn("egress listener failed: {}", e.getMessage());
                    }
                }
            }
        }

        void cut(String why) {
            if (cutBy == null) {
                cutBy = why;
            }
            closeQuietly(upstream);
            closeQuietly(client);
            Thread w = waiter;
            if (w != null) {
                w.interrupt();
            }
        }

        void recheck(EgressRules next) {
            if ((relaying || awaitingApproval) && address != null) {
                EgressDecision d = next.recheck(destination, port, address);
                if (!d.allowed()) {
                    cut("policy update: " + d.rule());
                }
            }
        }

        private void handle() throws IOException {
            if (!fill()) {
                return;
            }
            if (in.get(in.position()) == 0x05) {
                protocol = "socks5";
                socks();
            } else {
                http();
            }
        }

        /** Reads more into {@code in}; false on end of stream. Throws when the buffer is full. */
        private boolean fill() throws IOException {
            in.compact();
            try {
                if (!in.hasRemaining()) {
                    throw new IOException("header too large");
                }
                int n = client.read(in);
                return n > 0;
            } finally {
                in.flip();
            }
        }

        private int readByte() throws IOException {
            while (!in.hasRemaining()) {
                if (!fill()) {
                    throw new IOException("end of stream in handshake");
                }
            }
            return in.get() & 0xff;
        }

        private byte[] readBytes(int n) throws IOException {
            byte[] b = new byte[n];
            for (int i = 0; i < n; i++) {
                b[i] = (byte) readByte();
            }
            return b;
        }

        // ------------------------------------------------------------------ SOCKS5

        private void socks() throws IOException {
            readByte();
            int methods = readByte();
            boolean noAuth = false;
            for (byte m : readBytes(methods)) {
                noAuth |= m == 0;
            }
            if (!noAuth) {
                write(new byte[] {5, (byte) 0xff});
                rule = "socks: no acceptable authentication method";
                return;
            }
            write(new byte[] {5, 0});
            if (readByte() != 5) {
                rule = "socks: bad version";
                return;
            }
            int command = readByte();
            readByte();
            int type = readByte();
            String host;
            switch (type) {
                case 1 -> host = InetAddress.getByAddress(readBytes(4)).getHostAddress();
                case 3 -> {
                    int len = readByte();
                    host = new String(readBytes(len), java.nio.charset.StandardCharsets.ISO_8859_1);
                }
                case 4 -> host = "[" + InetAddress.getByAddress(readBytes(16)).getHostAddress() + "]";
                default -> {
                    socksReply(8);
                    rule = "socks: address type " + type + " not supported";
                    return;
                }
            }
            byte[] p = readBytes(2);
            port = (p[0] & 0xff) << 8 | (p[1] & 0xff);
            destination = EgressRules.normalize(host);
            if (command != 1) {
                socksReply(7);
                rule = "socks: only CONNECT is supported";
                return;
            }
            boolean inspect = inspected();
            try {
                admit(host);
                if (!inspect) {
                    dial();
                }
            } catch (Refused r) {
                rule = r.rule;
                socksReply(r.socksReply);
                return;
            }
            socksReply(0);
            if (inspect) {
                intercept();
            } else {
                relay(null);
            }
        }

        private void socksReply(int code) throws IOException {
            write(new byte[] {5, (byte) code, 0, 1, 0, 0, 0, 0, 0, 0});
        }

        // ------------------------------------------------------------------ HTTP

        private void http() throws IOException {
            HttpHead head;
            try {
                head = HttpHead.read(this::readByte, options.maxHeaderBytes());
            } catch (HttpHead.Malformed e) {
                protocol = "http";
                rule = "http: malformed request";
                httpError(400, rule, e.getMessage());
                return;
            }
            try {
                if (head.method().equals("CONNECT")) {
                    protocol = "http-connect";
                    HttpHead.Authority target = head.connectTarget();
                    destination = EgressRules.normalize(target.host());
                    port = target.port();
                    head.checkHostHeader(target);
                    // An inspected tunnel connects upstream only once its request is read (and approved).
                    boolean inspect = inspected();
                    admit(target.host());
                    if (!inspect) {
                        dial();
                    }
                    write("HTTP/1.1 200 Connection established\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                    if (inspect) {
                        intercept();
                    } else {
                        relay(null);
                    }
                } else {
                    protocol = "http-forward";
                    HttpHead.Authority target = head.absoluteTarget();
                    destination = EgressRules.normalize(target.host());
                    port = target.port();
                    head.checkHostHeader(target);
                    admit(target.host());
                    if (inspected()) {
                        forwardInspected(head, head.originPath(), target, false, clientInput(), clientOutput());
                    } else {
                        forwardPlain(head, target);
                    }
                }
            } catch (HttpHead.Malformed e) {
                rule = "http: " + e.getMessage();
                httpError(400, "http: bad request", e.getMessage());
            } catch (Refused r) {
                rule = r.rule;
                httpError(r.httpStatus, r.rule, r.getMessage());
            }
        }

        /**
         * The one request of a plain-HTTP forward: sent upstream with exactly its body, the response
         * relayed until upstream closes, then the connection ends. Nothing after that body is read,
         * so a pipelined request (another Host, another target) is never relayed unchecked; a
         * client asks again on a new connection, admitted like the first.
         */
        private void forwardPlain(HttpHead head, HttpHead.Authority target) throws IOException, HttpHead.Malformed, Refused {
            long length = head.bodyLength();
            dial();
            Socket s = upstream;
            exchange(head.originForm(target), length, List.of(), clientInput(), clientOutput(), s.getInputStream(), s.getOutputStream());
        }

        private void httpError(int status, String rule, String message) throws IOException {
            write(errorResponse(status, rule, message));
        }

        private static byte[] errorResponse(int status, String rule, String message) {
            String reason = switch (status) {
                case 400 -> "Bad Request";
                case 403 -> "Forbidden";
                case 405 -> "Method Not Allowed";
                case 429 -> "Too Many Requests";
                case 502 -> "Bad Gateway";
                case 504 -> "Gateway Timeout";
                default -> "Error";
            };
            String body = "airlock egress: " + (status == 403 ? "blocked by rule '" + rule + "': " : "") + message + "\n";
            byte[] b = body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            String head = "HTTP/1.1 " + status + " " + reason + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + b.length
                    + "\r\nConnection: close\r\nX-Airlock-Rule: " + HttpHead.printable(rule) + "\r\n\r\n";
            byte[] h = head.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
            byte[] all = java.util.Arrays.copyOf(h, h.length + b.length);
            System.arraycopy(b, 0, all, h.length, b.length);
            return all;
        }

        // ------------------------------------------------------------------ upstream and relay

        /**
         * The policy's decision on {@code host} (as the sandbox spelled it) and this connection's
         * port, and a connection slot: the address to connect to, or why not. Connects nothing.
         */
        private void admit(String host) throws Refused {
            EgressRules current = rules;
            NetworkPolicy policy = current.policy();
            EgressDecision d = current.decide(host, port);
            rule = d.rule();
            if (!(d instanceof EgressDecision.Allowed a)) {
                throw new Refused(403, 2, d.rule(), ((EgressDecision.Denied) d).reason());
            }
            address = a.address();
            if (bytes.get() >= policy.maxBytes()) {
                rule = "limit bytes";
                throw new Refused(403, 2, rule, "the sandbox has used its " + policy.maxBytes() + " bytes of network transfer");
            }
            // Take a slot before connecting, so a burst of connects cannot exceed the limit.
            if (established.incrementAndGet() > policy.maxConnections()) {
                established.decrementAndGet();
                rule = "limit connections";
                throw new Refused(429, 2, rule, "the sandbox already has " + policy.maxConnections() + " connections open");
            }
            holdsSlot = true;
            requestedHost = host;
            admittedBy = current;
            allowed = true;
        }

        /** Connects to exactly the admitted address, if the newest policy still allows it. */
        private void dial() throws Refused {
            Socket s = new Socket();
            try {
                s.setTcpNoDelay(true);
                upstream = s;
                s.connect(new InetSocketAddress(address, port), (int) options.connectTimeout().toMillis());
            } catch (SocketTimeoutException e) {
                closeQuietly(s);
                allowed = false;
                throw new Refused(504, 6, rule, "connecting to " + address.getHostAddress() + ":" + port + " timed out");
            } catch (ConnectException e) {
                closeQuietly(s);
                allowed = false;
                throw new Refused(502, 5, rule, "connection to " + address.getHostAddress() + ":" + port + " refused");
            } catch (IOException e) {
                closeQuietly(s);
                allowed = false;
                throw new Refused(502, 4, rule, "cannot connect to " + address.getHostAddress() + ":" + port + ": " + e.getMessage());
            }
            // The policy may have changed since admission (while connecting, or waiting for approval): the newest one decides.
            EgressRules now = rules;
            if (now != admittedBy) {
                EgressDecision again = now.recheck(requestedHost, port, address);
                if (!again.allowed()) {
                    closeQuietly(s);
                    allowed = false;
                    rule = again.rule();
                    throw new Refused(403, 2, again.rule(), ((EgressDecision.Denied) again).reason());
                }
            }
        }

        /** Relays both ways until both have ended; {@code head} goes upstream first. */
        private void relay(byte[] head) throws IOException {
            Socket s = upstream;
            lastActivity = System.nanoTime();
            relaying = true;
            // A cut (revocation) that raced with the start of relaying.
            if (cutBy != null) {
                return;
            }
            recheck(rules);
            OutputStream toUpstream = s.getOutputStream();
            InputStream fromUpstream = s.getInputStream();
            if (head != null) {
                toUpstream.write(head);
                count(up, head.length);
            }
            if (in.hasRemaining()) {
                int n = in.remaining();
                toUpstream.write(in.array(), in.position(), n);
                in.position(in.limit());
                count(up, n);
            }
            Thread downstream = Thread.ofVirtual().name("egress-down-" + sandboxId).start(() -> {
                byte[] buf = new byte[64 * 1024];
                try {
                    for (int n; (n = fromUpstream.read(buf)) > 0; ) {
                        ByteBuffer bb = ByteBuffer.wrap(buf, 0, n);
                        while (bb.hasRemaining()) {
                            client.write(bb);
                        }
                        count(down, n);
                    }
                    client.shutdownOutput();
                } catch (IOException e) {
                    cut("downstream: " + e.getMessage());
                }
            });
            ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
            try {
                for (int n; (n = client.read(buf)) > 0; buf.clear()) {
                    toUpstream.write(buf.array(), 0, n);
                    count(up, n);
                }
                s.shutdownOutput();
            } catch (IOException e) {
                if (cutBy == null) {
                    cut("upstream: " + e.getMessage());
                }
            }
            try {
                downstream.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        // ------------------------------------------------------------------ inspected destinations

        /** Whether this connection's requests are read here (a credential is bound, or an approval inspects). */
        private boolean inspected() {
            return interception != null && destination != null && interception.inspects(destination, port);
        }

        /**
         * An admitted tunnel to an inspected destination: TLS (told by its first byte, a handshake
         * record) ends here; what runs inside, TLS or not, must be one HTTP request.
         */
        private void intercept() throws IOException {
            while (!in.hasRemaining()) {
                if (!fill()) {
                    return;
                }
            }
            if (in.get(in.position()) != 0x16) {
                tunnelRequest(clientInput(), clientOutput(), false);
                return;
            }
            TlsChannel tls = new TlsChannel(client, interception.sandboxEngine(destination, port), in);
            try {
                try {
                    tls.handshake();
                } catch (IOException e) {
                    cut("intercepted: TLS handshake with the sandbox failed: " + HttpHead.printable(String.valueOf(e.getMessage())));
                    return;
                }
                tunnelRequest(tls.input(), tls.output(), true);
            } finally {
                tls.close();
            }
        }

        /** Reads the one request of an inspected tunnel and hands it on. */
        private void tunnelRequest(InputStream fromClient, OutputStream toClient, boolean tls) throws IOException {
            HttpHead.Authority authority = new HttpHead.Authority(destination, port);
            HttpHead head;
            String path;
            try {
                head = HttpHead.read(() -> {
                    int b = fromClient.read();
                    if (b < 0) {
                        throw new EOFException("end of stream before a request");
                    }
                    return b;
                }, options.maxHeaderBytes());
                path = head.tunnelTarget();
                head.checkHostHeader(authority);
            } catch (HttpHead.Malformed e) {
                badRequest(e, toClient);
                return;
            }
            forwardInspected(head, path, authority, tls, fromClient, toClient);
        }

        /**
         * The one request of an admitted connection to an inspected destination (in a tunnel, or
         * plain HTTP): checked, held for approval if an approval covers it, then, and only then,
         * connected upstream (TLS verified first) and sent on with the bound credentials set.
         */
        private void forwardInspected(HttpHead head, String path, HttpHead.Authority authority, boolean tls, InputStream fromClient,
                                      OutputStream toClient) throws IOException {
            List<Credential> bound = interception.boundTo(destination, port);
            long length;
            List<String> methods;
            try {
                length = head.bodyLength();
                methods = head.methods();
            } catch (HttpHead.Malformed e) {
                badRequest(e, toClient);
                return;
            }
            if (!bound.isEmpty() && head.echoesRequest()) {
                refusedInside(TRACE_REFUSED);
                toClient.write(errorResponse(405, TRACE_REFUSED, head.method() + " would echo the credential back: not sent to a credential's destination"));
                return;
            }
            String held = interception.approvalFor(methods, destination, port);
            if (held != null && !approved(held, path)) {
                refuseUnapproved(held, path, length, fromClient, toClient);
                return;
            }
            try {
                dial();
            } catch (Refused r) {
                rule = r.rule;
                toClient.write(errorResponse(r.httpStatus, r.rule, r.getMessage()));
                return;
            }
            Socket s = upstream;
            InputStream fromUpstream;
            OutputStream toUpstream;
            if (tls) {
                SSLSocket verified;
                try {
                    // Verified before anything is sent: a secret never goes to an unverified peer.
                    verified = interception.connectUpstream(s, destination, port);
                } catch (IOException e) {
                    String why = "TLS to " + destination + ":" + port + " failed verification: " + HttpHead.printable(String.valueOf(e.getMessage()));
                    refusedInside("intercepted: upstream " + why);
                    toClient.write(errorResponse(502, "intercepted", "upstream " + why));
                    return;
                }
                fromUpstream = verified.getInputStream();
                toUpstream = verified.getOutputStream();
            } else {
                fromUpstream = s.getInputStream();
                toUpstream = s.getOutputStream();
            }
            exchange(head.forward(path, authority, tls ? 443 : 80, bound), length, bound, fromClient, toClient, fromUpstream, toUpstream);
        }

        private void badRequest(HttpHead.Malformed e, OutputStream toClient) throws IOException {
            refusedInside("intercepted: bad request: " + HttpHead.printable(e.getMessage()));
            toClient.write(errorResponse(400, "http: bad request", e.getMessage()));
        }

        /**
         * Asks the gate, on this thread, with no lock held. While it waits, only the approval
         * timeout applies; a cut (proxy closed, policy update, that timeout) interrupts it and
         * counts as a refusal, whatever the gate answers afterwards.
         */
        private boolean approved(String method, String path) {
            String target = HttpHead.printable(path, RequestGate.MAX_TARGET);
            boolean yes = false;
            approvalStarted = System.nanoTime();
            waiter = Thread.currentThread();
            awaitingApproval = true;
            try {
                if (cutBy == null) {
                    yes = gate.approve(sandboxId, method, destination, port, target);
                }
            } catch (InterruptedException e) {
                // cut while waiting: refused
            } catch (RuntimeException e) {
                LOG.warn("the request gate failed on {} {}:{} of {}; refused: {}", HttpHead.printable(method), destination, port, sandboxId,
                        e.toString());
            } finally {
                waiter = null;
                // From here the idle timeout applies, counted from the answer (set before the wait ends, for the watchdog).
                lastActivity = System.nanoTime();
                relaying = true;
                awaitingApproval = false;
            }
            yes = yes && cutBy == null;
            approval = yes ? EgressRecord.APPROVED : EgressRecord.DENIED;
            return yes;
        }

        /** The answer to a request the gate did not approve: 403, and nothing upstream. */
        private void refuseUnapproved(String method, String path, long length, InputStream fromClient, OutputStream toClient)
                throws IOException {
            allowed = false;
            rule = "request approval: " + HttpHead.printable(method) + " denied" + (cutBy != null ? " (" + cutBy + ")" : "");
            if (cutBy != null) {
                return;
            }
            toClient.write(errorResponse(403, rule, HttpHead.printable(method) + " " + HttpHead.printable(path) + " to " + destination + ":" + port
                    + " needs a person's approval and was not approved"));
            toClient.flush();
            // Read a small body the client may still be sending, so that it sees the answer rather than a reset
            // (one that waits for 100 Continue closes instead, on this final answer; the idle timeout bounds the rest).
            if (length > 0 && length <= MAX_DISCARDED_BODY) {
                try {
                    HttpBody.copyLength(fromClient, OutputStream.nullOutputStream(), length, n -> lastActivity = System.nanoTime());
                } catch (IOException e) {
                    // the client went away: nothing to answer
                }
            }
        }

        /**
         * Sends {@code request} (head with the credentials set), then exactly its body, and relays
         * the response until upstream closes (it was asked to). Nothing the client sends after the
         * body is read, so no second request can reach upstream without passing here.
         */
        private void exchange(byte[] request, long length, List<Credential> bound, InputStream fromClient, OutputStream toClient,
                              InputStream fromUpstream, OutputStream toUpstream) throws IOException {
            lastActivity = System.nanoTime();
            relaying = true;
            recheck(rules);
            if (cutBy != null) {
                return;
            }
            toUpstream.write(request);
            toUpstream.flush();
            count(up, request.length);
            bound.forEach(c -> injected.add(c.name()));
            CountDownLatch bodyDone = new CountDownLatch(length == 0 ? 0 : 1);
            Thread downstream = Thread.ofVirtual().name("egress-down-" + sandboxId).start(() -> {
                byte[] buf = new byte[64 * 1024];
                try {
                    for (int n; (n = fromUpstream.read(buf)) > 0; ) {
                        toClient.write(buf, 0, n);
                        count(down, n);
                    }
                    toClient.flush();
                } catch (IOException e) {
                    cut("downstream: " + e.getMessage());
                }
                try {
                    // A response that ends before the request body (an early error) ends the exchange.
                    if (!bodyDone.await(1, TimeUnit.SECONDS)) {
                        cut("response ended before the request body");
                    }
                } catch (InterruptedException e) {
                    cut("interrupted");
                }
            });
            try {
                if (length > 0) {
                    HttpBody.copyLength(fromClient, toUpstream, length, n -> count(up, n));
                } else if (length < 0) {
                    HttpBody.copyChunked(fromClient, toUpstream, options.maxHeaderBytes(), n -> count(up, n));
                }
                toUpstream.flush();
            } catch (IOException e) {
                if (cutBy == null) {
                    cut("upstream: " + e.getMessage());
                }
            } finally {
                bodyDone.countDown();
            }
            try {
                downstream.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        /** Records why an inspected connection ended without being forwarded; the answer goes to the client first. */
        private void refusedInside(String why) {
            if (cutBy == null) {
                cutBy = why;
            }
        }

        private InputStream clientInput() {
            return new InputStream() {
                @Override
                public int read() throws IOException {
                    byte[] one = new byte[1];
                    return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
                }

                @Override
                public int read(byte[] b, int off, int len) throws IOException {
                    if (len == 0) {
                        return 0;
                    }
                    if (!in.hasRemaining() && !fill()) {
                        return -1;
                    }
                    int n = Math.min(len, in.remaining());
                    in.get(b, off, n);
                    return n;
                }
            };
        }

        private OutputStream clientOutput() {
            return new OutputStream() {
                @Override
                public void write(int b) throws IOException {
                    write(new byte[] {(byte) b}, 0, 1);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    ByteBuffer bb = ByteBuffer.wrap(b, off, len);
                    while (bb.hasRemaining()) {
                        client.write(bb);
                    }
                }
            };
        }

        private void count(AtomicLong direction, int n) {
            direction.addAndGet(n);
            lastActivity = System.nanoTime();
            long total = bytes.addAndGet(n);
            if (total > rules.policy().maxBytes()) {
                cut("limit bytes");
            }
        }

        private void write(byte[] b) throws IOException {
            ByteBuffer bb = ByteBuffer.wrap(b);
            while (bb.hasRemaining()) {
                client.write(bb);
            }
        }
    }
}
