package dev.airlock.server.rest;

import dev.airlock.core.PortConnection;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.http.ConsoleSessions;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.wire.Json;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Forwards one client request to a preview port of a sandbox (docs/security-model.md, "Preview
 * ports"), once the door authenticated the client and {@code Command.OpenPort} admitted the port:
 * as HTTP/1.1 over a TCP connection the agent opens inside the sandbox, one connection per request
 * ({@code Connection: close}). The sandbox never sees the client's credentials (Cookie,
 * Authorization, the console's CSRF header are dropped) and cannot set any for this origin
 * (Set-Cookie is dropped); every answer carries {@link #PREVIEW_CSP}, so a page served from inside
 * runs with an opaque origin and cannot read the console or use its cookie. An {@code Upgrade}
 * (a WebSocket) is forwarded, and once the sandbox's server answers 101 the bytes are spliced
 * both ways.
 *
 * <p>Bounded: {@value #PER_SANDBOX} streams at once per sandbox, {@value #PER_CLIENT} per client
 * (the sandboxes' owner, so that one client's slow sandboxes cannot hold every stream of the
 * server) and {@value #PER_SERVER} per server (429 with Retry-After beyond); a request body of at
 * most {@value #MAX_BODY} bytes; {@value #MAX_HEADERS} bytes of response headers (502 beyond);
 * {@link #FIRST_BYTE} for the sandbox to start answering (504); {@link #IDLE} without a byte either
 * way ends a stream, and {@link #LIFETIME} ends it whatever it carries (a server that answers a
 * byte a minute is never idle). Bodies are streamed, never held whole.
 */
final class PortProxy implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(PortProxy.class);
    /** What a preview's answers may do: run scripts, forms, popups, but never as this server's origin. */
    static final String PREVIEW_CSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";
    static final int PER_SANDBOX = 32;
    static final int PER_CLIENT = 64;
    static final int PER_SERVER = 256;
    static final long MAX_BODY = 64L << 20;
    static final int MAX_HEADERS = 64 * 1024;
    static final Duration FIRST_BYTE = Duration.ofSeconds(30);
    static final Duration IDLE = Duration.ofMinutes(5);
    static final Duration LIFETIME = Duration.ofHours(1);
    /** Request headers the sandbox never sees: hop-by-hop ones, and the client's credentials for this server. */
    private static final Set<String> DROPPED_REQUEST = Set.of("connection", "keep-alive", "proxy-connection", "proxy-authenticate",
            "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "content-length", "host",
            "cookie", "authorization", ConsoleSessions.CSRF_HEADER.toLowerCase(Locale.ROOT));
    /** Response headers the client never sees: hop-by-hop ones, cookies, those this server sets itself, and those that act on its origin. */
    private static final Set<String> DROPPED_RESPONSE = Set.of("connection", "keep-alive", "proxy-connection", "proxy-authenticate",
            "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "content-length", "set-cookie", "set-cookie2",
            "content-security-policy", "content-security-policy-report-only", "x-frame-options", "x-content-type-options",
            "referrer-policy", "cache-control", "date", "server", "strict-transport-security",
            // what would act on this server's origin beyond the page: wiping the console's cookies and storage, widening a service worker's scope
            "clear-site-data", "service-worker-allowed");

    private final AtomicInteger total = new AtomicInteger();
    private final Map<String, AtomicInteger> perSandbox = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> perClient = new ConcurrentHashMap<>();
    private final Set<Stream> streams = ConcurrentHashMap.newKeySet();
    /** Checks the streams' times each second; started with the first stream. */
    private ScheduledExecutorService watchdog;
    private boolean closed;

    @Override
    public synchronized void close() {
        closed = true;
        if (watchdog != null) {
            watchdog.shutdownNow();
        }
        streams.forEach(Stream::end);
    }

    private synchronized void watch() {
        if (watchdog == null && !closed) {
            watchdog = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("airlock-port-watchdog").daemon().factory());
            watchdog.scheduleAtFixedRate(this::checkTimes, 1, 1, TimeUnit.SECONDS);
        }
    }

    /** Streams open now (tests watch them drain). */
    int open() {
        return total.get();
    }

    /**
     * Forwards {@code req} to {@code port} of {@code sandbox}, at {@code target} (the path after
     * the port's prefix, with the query string), and writes the sandbox's answer, or an error.
     */
    void forward(HttpServletRequest req, HttpServletResponse resp, SandboxView sandbox, int port, String target) throws IOException {
        preview(resp);
        if (!take(sandbox.id(), sandbox.owner())) {
            error(resp, 429, "quota_exceeded", "too many preview streams at once: at most " + PER_SANDBOX + " per sandbox, " + PER_CLIENT
                    + " for the sandboxes of one client and " + PER_SERVER + " per server; close some (or wait for them to end) and retry");
            return;
        }
        watch();
        Stream stream = new Stream(sandbox.id(), sandbox.owner());
        boolean upgraded = false;
        try {
            long length = req.getContentLengthLong();
            if (length > MAX_BODY) {
                error(resp, 413, "too_large", "a request body through a preview port is at most " + MAX_BODY + " bytes, not " + length);
                return;
            }
            PortConnection c;
            try {
                c = sandbox.connect(port); // the agent's client bounds the wait (ETIMEDOUT below)
            } catch (PortConnection.RefusedException e) {
                if ("ETIMEDOUT".equals(e.errno())) {
                    error(resp, 504, "gateway_timeout", "the connection to port " + port + " in the sandbox timed out: its server does not"
                            + " accept connections (" + e.getMessage() + ")");
                    return;
                }
                if ("EMFILE".equals(e.errno())) {
                    error(resp, 429, "quota_exceeded", "the sandbox's agent carries its most port connections at once: " + e.getMessage());
                    return;
                }
                error(resp, 502, "bad_gateway", "ECONNREFUSED".equals(e.errno())
                        ? "nothing listens on port " + port + " in the sandbox: start a server there on 127.0.0.1 or 0.0.0.0 port " + port
                        : "cannot connect to port " + port + " in the sandbox (" + e.errno() + "): " + e.getMessage());
                return;
            } catch (IOException e) {
                error(resp, 502, "bad_gateway", "cannot reach port " + port + " in the sandbox: " + e.getMessage());
                return;
            }
            stream.connection = c;
            streams.add(stream);
            String upgrade = req.getHeader("Upgrade");
            OutputStream toSandbox = new ActivityOutput(c.output(), stream);
            toSandbox.write(requestHead(req, port, target, upgrade));
            boolean chunked = length < 0 && req.getHeader("Transfer-Encoding") != null;
            if (length > 0 || chunked) {
                if (!copyBody(req.getInputStream(), toSandbox, length, chunked)) {
                    error(resp, 413, "too_large", "a request body through a preview port is at most " + MAX_BODY + " bytes");
                    return;
                }
            }
            toSandbox.flush();
            InputStream fromSandbox = new ActivityInput(c.input(), stream);
            ResponseHead head;
            try {
                head = ResponseHead.read(fromSandbox);
                while (head.status() >= 100 && head.status() < 200 && head.status() != 101) {
                    head = ResponseHead.read(fromSandbox); // 100 Continue and such: the final answer follows
                }
            } catch (BadResponse e) {
                error(resp, 502, "bad_gateway", "the server on port " + port + " in the sandbox sent no valid HTTP answer: " + e.getMessage());
                return;
            } catch (IOException e) {
                if (stream.timedOut.get()) {
                    error(resp, 504, "gateway_timeout", "the server on port " + port + " in the sandbox did not answer within "
                            + FIRST_BYTE.toSeconds() + " seconds");
                } else {
                    error(resp, 502, "bad_gateway", "the server on port " + port + " in the sandbox closed the connection without an answer");
                }
                return;
            }
            stream.answered = true;
            resp.setStatus(head.status());
            String prefix = prefix(req.getRequestURI(), target);
            for (String[] h : head.headers()) {
                String name = h[0].toLowerCase(Locale.ROOT);
                if (DROPPED_RESPONSE.contains(name) || head.connectionTokens().contains(name)) {
                    continue;
                }
                // a redirect to a path of the server inside stays within the preview
                boolean local = name.equals("location") && h[1].startsWith("/") && !h[1].startsWith("//");
                resp.addHeader(h[0], local ? prefix + h[1] : h[1]);
            }
            preview(resp);
            if (head.status() == 101) {
                if (upgrade == null) {
                    resp.setStatus(502);
                    error(resp, 502, "bad_gateway", "the server on port " + port + " in the sandbox switched protocols without being asked to");
                    return;
                }
                // Jetty core's upgrade: once this 101 is sent, the client's connection is handed to the splice
                // (the servlet API's HttpServletRequest.upgrade gives an input that reads end-of-file at once in this Jetty)
                org.eclipse.jetty.server.Request core = org.eclipse.jetty.ee10.servlet.ServletContextRequest.getServletContextRequest(req);
                org.eclipse.jetty.io.EndPoint endPoint = core.getConnectionMetaData().getConnection().getEndPoint();
                req.setAttribute(org.eclipse.jetty.server.HttpStream.UPGRADE_CONNECTION_ATTRIBUTE, new Splice(endPoint,
                        core.getConnectionMetaData().getConnector().getExecutor(), this, stream, fromSandbox, toSandbox));
                resp.setStatus(101);
                resp.setHeader("Connection", "Upgrade");
                resp.setHeader("Upgrade", upgrade);
                upgraded = true;
                return;
            }
            String te = head.header("transfer-encoding");
            String cl = head.header("content-length");
            boolean noBody = req.getMethod().equals("HEAD") || head.status() == 204 || head.status() == 304;
            OutputStream out = resp.getOutputStream();
            if (noBody) {
                return;
            }
            if (te != null && te.toLowerCase(Locale.ROOT).contains("chunked")) {
                Chunked.copy(fromSandbox, out);
            } else if (cl != null) {
                long n;
                try {
                    n = Long.parseLong(cl.trim());
                } catch (NumberFormatException e) {
                    n = -1;
                }
                if (n >= 0) {
                    resp.setContentLengthLong(n);
                    copy(fromSandbox, out, n);
                } else {
                    fromSandbox.transferTo(out);
                }
            } else {
                copyFlushing(fromSandbox, out);
            }
        } catch (IOException e) {
            // either side went away, or the stream idled out: nothing more can be answered
            LOG.debug("preview stream to port {} of sandbox {} ended: {}", port, sandbox.id(), e.toString());
            if (!resp.isCommitted()) {
                error(resp, 502, "bad_gateway", "the connection to port " + port + " in the sandbox broke: " + e.getMessage());
            }
        } finally {
            if (!upgraded) {
                end(stream);
            }
        }
    }

    /** The part of the request's path before the path it asked the sandbox for: {@code /v1/sandboxes/x/ports/8000}, {@code /preview/<token>}. */
    static String prefix(String requestUri, String target) {
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        return requestUri.endsWith(path) ? requestUri.substring(0, requestUri.length() - path.length()) : "";
    }

    /** The headers every preview answer carries, errors included. */
    private static void preview(HttpServletResponse resp) {
        resp.setHeader("Content-Security-Policy", PREVIEW_CSP);
        resp.setHeader("X-Content-Type-Options", "nosniff");
        resp.setHeader("Referrer-Policy", "no-referrer");
        resp.setHeader("Cache-Control", "no-store");
    }

    private synchronized boolean take(String sandbox, String client) {
        int ofSandbox = perSandbox.getOrDefault(sandbox, new AtomicInteger()).get();
        int ofClient = perClient.getOrDefault(client, new AtomicInteger()).get();
        if (total.get() >= PER_SERVER || ofSandbox >= PER_SANDBOX || ofClient >= PER_CLIENT) {
            return false;
        }
        total.incrementAndGet();
        perSandbox.computeIfAbsent(sandbox, k -> new AtomicInteger()).incrementAndGet();
        perClient.computeIfAbsent(client, k -> new AtomicInteger()).incrementAndGet();
        return true;
    }

    /** Ends a stream: its connection closed, its slots given back. Once per stream. */
    private void end(Stream s) {
        if (!s.ended.compareAndSet(false, true)) {
            return;
        }
        streams.remove(s);
        s.end();
        synchronized (this) {
            total.decrementAndGet();
            perSandbox.computeIfPresent(s.sandbox, (k, n) -> n.decrementAndGet() <= 0 ? null : n);
            perClient.computeIfPresent(s.client, (k, n) -> n.decrementAndGet() <= 0 ? null : n);
        }
    }

    /** Closes streams whose sandbox did not start answering in time, or that went idle. */
    private void checkTimes() {
        long now = System.nanoTime();
        for (Stream s : streams) {
            long quiet = now - s.lastActivity;
            if ((!s.answered && quiet > FIRST_BYTE.toNanos()) || quiet > IDLE.toNanos() || now - s.started > LIFETIME.toNanos()) {
                s.timedOut.set(true);
                end(s);
            }
        }
    }

    /** The request line and headers for the sandbox's server. */
    private static byte[] requestHead(HttpServletRequest req, int port, String target, String upgrade) {
        StringBuilder b = new StringBuilder();
        b.append(req.getMethod()).append(' ').append(target).append(" HTTP/1.1\r\n");
        b.append("Host: localhost:").append(port).append("\r\n");
        Set<String> connectionTokens = tokens(Collections.list(req.getHeaders("Connection")));
        for (String name : Collections.list(req.getHeaderNames())) {
            String lower = name.toLowerCase(Locale.ROOT);
            if (DROPPED_REQUEST.contains(lower) || connectionTokens.contains(lower)) {
                continue;
            }
            for (String value : Collections.list(req.getHeaders(name))) {
                b.append(name).append(": ").append(value).append("\r\n");
            }
        }
        long length = req.getContentLengthLong();
        if (length >= 0) {
            b.append("Content-Length: ").append(length).append("\r\n");
        } else if (req.getHeader("Transfer-Encoding") != null) {
            b.append("Transfer-Encoding: chunked\r\n");
        }
        if (upgrade != null) {
            b.append("Upgrade: ").append(upgrade).append("\r\nConnection: Upgrade\r\n");
        } else {
            b.append("Connection: close\r\n");
        }
        b.append("\r\n");
        return b.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    private static Set<String> tokens(List<String> values) {
        Set<String> out = new HashSet<>();
        for (String v : values) {
            for (String t : v.split(",")) {
                if (!t.isBlank()) {
                    out.add(t.trim().toLowerCase(Locale.ROOT));
                }
            }
        }
        return out;
    }

    /** Copies a request body of {@code length} bytes (or chunked, re-chunked); false when it is over {@link #MAX_BODY}. */
    private static boolean copyBody(InputStream in, OutputStream out, long length, boolean chunked) throws IOException {
        byte[] buf = new byte[16 * 1024];
        long sent = 0;
        int n;
        while ((length < 0 || sent < length) && (n = in.read(buf, 0, (int) (length < 0 ? buf.length : Math.min(buf.length, length - sent)))) > 0) {
            sent += n;
            if (sent > MAX_BODY) {
                return false;
            }
            if (chunked) {
                out.write((Integer.toHexString(n) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
                out.write(buf, 0, n);
                out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
            } else {
                out.write(buf, 0, n);
            }
        }
        if (chunked) {
            out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
        }
        return true;
    }

    private static void copy(InputStream in, OutputStream out, long n) throws IOException {
        byte[] buf = new byte[16 * 1024];
        long left = n;
        while (left > 0) {
            int r = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (r < 0) {
                throw new IOException("the server in the sandbox ended its answer " + left + " bytes short of its Content-Length");
            }
            out.write(buf, 0, r);
            left -= r;
        }
    }

    /** Copies to the end, flushing what came: an answer without a length may be a stream of events. */
    private static void copyFlushing(InputStream in, OutputStream out) throws IOException {
        byte[] buf = new byte[16 * 1024];
        int r;
        while ((r = in.read(buf)) >= 0) {
            out.write(buf, 0, r);
            if (in.available() == 0) {
                out.flush();
            }
        }
    }

    private static void error(HttpServletResponse resp, int status, String code, String message) throws IOException {
        if (resp.isCommitted()) {
            return;
        }
        resp.reset(); // nothing of a half-relayed answer (its length, its type) stays
        preview(resp);
        resp.setHeader("X-Frame-Options", "DENY");
        if (status == 429) {
            resp.setHeader("Retry-After", "5");
        }
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(JsonViews.error(code, message));
    }

    /** One forwarded request (or spliced upgrade): its connection and when a byte last moved. */
    static final class Stream {
        final String sandbox;
        final String client;
        final long started = System.nanoTime();
        final AtomicBoolean ended = new AtomicBoolean();
        final AtomicBoolean timedOut = new AtomicBoolean();
        volatile PortConnection connection;
        volatile long lastActivity = System.nanoTime();
        volatile boolean answered;

        Stream(String sandbox, String client) {
            this.sandbox = sandbox;
            this.client = client;
        }

        void touch() {
            lastActivity = System.nanoTime();
        }

        void end() {
            PortConnection c = connection;
            if (c != null) {
                c.close();
            }
        }
    }

    /** A header's name, as HTTP defines a token. */
    private static final java.util.regex.Pattern HEADER_NAME = java.util.regex.Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");

    /** The status line and headers of the sandbox server's answer, read within {@link #MAX_HEADERS} bytes. */
    record ResponseHead(int status, List<String[]> headers) {

        String header(String name) {
            for (String[] h : headers) {
                if (h[0].equalsIgnoreCase(name)) {
                    return h[1];
                }
            }
            return null;
        }

        Set<String> connectionTokens() {
            List<String> values = new ArrayList<>();
            headers.stream().filter(h -> h[0].equalsIgnoreCase("Connection")).forEach(h -> values.add(h[1]));
            return tokens(values);
        }

        static ResponseHead read(InputStream in) throws IOException {
            int[] used = {0};
            String statusLine = line(in, used);
            if (statusLine == null) {
                throw new IOException("closed before answering");
            }
            String[] parts = statusLine.split(" ", 3);
            if (parts.length < 2 || !parts[0].startsWith("HTTP/1.") || !parts[1].matches("[1-5][0-9][0-9]")) {
                throw new BadResponse("its status line is '" + Json.printable(statusLine.length() > 80 ? statusLine.substring(0, 80) : statusLine) + "'");
            }
            List<String[]> headers = new ArrayList<>();
            String l;
            while ((l = line(in, used)) != null && !l.isEmpty()) {
                int colon = l.indexOf(':');
                if (colon <= 0 || !HEADER_NAME.matcher(l.substring(0, colon)).matches()) {
                    throw new BadResponse("a header line is malformed: '" + Json.printable(l.length() > 80 ? l.substring(0, 80) : l) + "'");
                }
                String value = l.substring(colon + 1).trim();
                if (value.chars().anyMatch(ch -> (ch < 0x20 && ch != '\t') || ch == 0x7f)) {
                    throw new BadResponse("header " + Json.printable(l.substring(0, colon)) + " holds a control character");
                }
                headers.add(new String[]{l.substring(0, colon), value});
            }
            if (l == null) {
                throw new BadResponse("it closed the connection within its headers");
            }
            return new ResponseHead(Integer.parseInt(parts[1]), headers);
        }

        /** One line without its CRLF; null at the end of the stream before any byte. */
        private static String line(InputStream in, int[] used) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            int c;
            while ((c = in.read()) >= 0) {
                if (++used[0] > MAX_HEADERS) {
                    throw new BadResponse("its headers are over " + MAX_HEADERS + " bytes");
                }
                if (c == '\n') {
                    byte[] bytes = b.toByteArray();
                    int len = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
                    return new String(bytes, 0, len, StandardCharsets.ISO_8859_1);
                }
                b.write(c);
            }
            if (b.size() > 0) {
                throw new BadResponse("it closed the connection within a header line");
            }
            return null;
        }
    }

    /** The sandbox's server answered something that is not HTTP/1.x, or too much of it. */
    static final class BadResponse extends IOException {
        BadResponse(String message) {
            super(message);
        }
    }

    /** A chunked body, decoded and written on (the client's connection chunks it again as it needs). */
    static final class Chunked {
        static void copy(InputStream in, OutputStream out) throws IOException {
            int[] used = {0};
            while (true) {
                used[0] = 0;
                String size = ResponseHead.line(in, used);
                if (size == null) {
                    throw new IOException("the chunked answer ended without its last chunk");
                }
                int semi = size.indexOf(';');
                long n;
                try {
                    n = Long.parseLong((semi >= 0 ? size.substring(0, semi) : size).trim(), 16);
                } catch (NumberFormatException e) {
                    throw new BadResponse("a chunk size is not hexadecimal");
                }
                if (n < 0) {
                    throw new BadResponse("a chunk size is negative");
                }
                if (n == 0) {
                    String trailer;
                    do {
                        used[0] = 0;
                        trailer = ResponseHead.line(in, used);
                    } while (trailer != null && !trailer.isEmpty());
                    return;
                }
                PortProxy.copy(in, out, n);
                out.flush();
                used[0] = 0;
                ResponseHead.line(in, used); // the CRLF after the chunk
            }
        }
    }

    /** Reads from the sandbox, marking the stream active. */
    private static final class ActivityInput extends java.io.FilterInputStream {
        private final Stream stream;

        ActivityInput(InputStream in, Stream stream) {
            super(new java.io.BufferedInputStream(in, 16 * 1024));
            this.stream = stream;
        }

        @Override
        public int read() throws IOException {
            int c = super.read();
            stream.touch();
            return c;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            stream.touch();
            return n;
        }
    }

    /** Writes to the sandbox, marking the stream active. */
    private static final class ActivityOutput extends java.io.FilterOutputStream {
        private final Stream stream;

        ActivityOutput(OutputStream out, Stream stream) {
            super(out);
            this.stream = stream;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            stream.touch();
        }
    }

    /**
     * The client's connection after a 101: its bytes go to the sandbox's server as Jetty reads
     * them, and the server's to it from a virtual thread, until either side closes (the other is
     * then half-closed, so what is in flight still arrives) or the stream idles out.
     */
    static final class Splice extends org.eclipse.jetty.io.AbstractConnection implements org.eclipse.jetty.io.Connection.UpgradeTo {
        private final PortProxy proxy;
        private final Stream stream;
        private final InputStream fromSandbox;
        private final OutputStream toSandbox;
        private final java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocate(16 * 1024);
        private final AtomicInteger open = new AtomicInteger(2);
        private byte[] early = new byte[0];

        Splice(org.eclipse.jetty.io.EndPoint endPoint, java.util.concurrent.Executor executor, PortProxy proxy, Stream stream,
               InputStream fromSandbox, OutputStream toSandbox) {
            super(endPoint, executor);
            this.proxy = proxy;
            this.stream = stream;
            this.fromSandbox = fromSandbox;
            this.toSandbox = toSandbox;
        }

        @Override
        public void onUpgradeTo(java.nio.ByteBuffer prefilled) {
            if (prefilled != null && prefilled.hasRemaining()) {
                early = new byte[prefilled.remaining()];
                prefilled.get(early);
            }
        }

        @Override
        public void onOpen() {
            super.onOpen();
            getEndPoint().setIdleTimeout(IDLE.toMillis());
            Thread.ofVirtual().name("airlock-port-down").start(this::down);
            Thread.ofVirtual().name("airlock-port-up").start(() -> {
                try {
                    if (early.length > 0) {
                        toSandbox.write(early);
                        toSandbox.flush();
                    }
                    fillInterested();
                } catch (IOException e) {
                    fail();
                }
            });
        }

        /** The client sent bytes (Jetty calls this on a thread that may block): on to the sandbox. */
        @Override
        public void onFillable() {
            try {
                while (true) {
                    buffer.clear();
                    buffer.flip();
                    int n = getEndPoint().fill(buffer);
                    if (n > 0) {
                        toSandbox.write(buffer.array(), buffer.arrayOffset() + buffer.position(), buffer.remaining());
                        toSandbox.flush();
                    } else if (n == 0) {
                        fillInterested();
                        return;
                    } else {
                        toSandbox.close(); // the client is done sending: half-close, the answer may still come
                        done();
                        return;
                    }
                }
            } catch (IOException e) {
                fail();
            }
        }

        /** The sandbox's bytes to the client, until the sandbox's server closes. */
        private void down() {
            byte[] buf = new byte[16 * 1024];
            try {
                int n;
                while ((n = fromSandbox.read(buf)) >= 0) {
                    org.eclipse.jetty.util.FutureCallback written = new org.eclipse.jetty.util.FutureCallback();
                    getEndPoint().write(written, java.nio.ByteBuffer.wrap(buf, 0, n));
                    written.get(IDLE.toMillis(), TimeUnit.MILLISECONDS);
                    stream.touch();
                }
                getEndPoint().shutdownOutput();
                done();
            } catch (Exception e) {
                fail();
            }
        }

        private void done() {
            if (open.decrementAndGet() <= 0) {
                getEndPoint().close();
                proxy.end(stream);
            }
        }

        private void fail() {
            open.set(0);
            stream.end();
            getEndPoint().close();
            proxy.end(stream);
        }

        @Override
        public void onClose(Throwable cause) {
            super.onClose(cause);
            stream.end();
            proxy.end(stream);
        }
    }
}

