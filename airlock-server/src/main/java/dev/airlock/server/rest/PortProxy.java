package dev.airlock.server.rest;

import dev.airlock.core.PortConnection;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.http.JsonViews;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
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
    private final AtomicInteger total = new AtomicInteger();
    private final Map<String, AtomicInteger> perSandbox = new ConcurrentHashMap<>();
    private final Map<String, AtomicInteger> perClient = new ConcurrentHashMap<>();
    private final Set<PreviewStream> streams = ConcurrentHashMap.newKeySet();
    /** Checks the streams' times each second; started with the first stream. */
    private ScheduledExecutorService watchdog;
    private boolean closed;

    @Override
    public synchronized void close() {
        closed = true;
        if (watchdog != null) {
            watchdog.shutdownNow();
        }
        streams.forEach(PreviewStream::end);
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
        PreviewStream stream = new PreviewStream(sandbox.id(), sandbox.owner());
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
            OutputStream toSandbox = new PreviewStream.ActivityOutput(c.output(), stream);
            toSandbox.write(PreviewHttp.requestHead(req, port, target, upgrade));
            boolean chunked = length < 0 && req.getHeader("Transfer-Encoding") != null;
            if (length > 0 || chunked) {
                if (!PreviewHttp.copyBody(req.getInputStream(), toSandbox, length, chunked)) {
                    error(resp, 413, "too_large", "a request body through a preview port is at most " + MAX_BODY + " bytes");
                    return;
                }
            }
            toSandbox.flush();
            InputStream fromSandbox = new PreviewStream.ActivityInput(c.input(), stream);
            PreviewHttp.ResponseHead head;
            try {
                head = PreviewHttp.ResponseHead.read(fromSandbox);
                while (head.status() >= 100 && head.status() < 200 && head.status() != 101) {
                    head = PreviewHttp.ResponseHead.read(fromSandbox); // 100 Continue and such: the final answer follows
                }
            } catch (PreviewHttp.BadResponse e) {
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
                if (PreviewHttp.DROPPED_RESPONSE.contains(name) || head.connectionTokens().contains(name)) {
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
                req.setAttribute(org.eclipse.jetty.server.HttpStream.UPGRADE_CONNECTION_ATTRIBUTE, new PreviewSplice(endPoint,
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
                PreviewHttp.Chunked.copy(fromSandbox, out);
            } else if (cl != null) {
                long n;
                try {
                    n = Long.parseLong(cl.trim());
                } catch (NumberFormatException e) {
                    n = -1;
                }
                if (n >= 0) {
                    resp.setContentLengthLong(n);
                    PreviewHttp.copy(fromSandbox, out, n);
                } else {
                    fromSandbox.transferTo(out);
                }
            } else {
                PreviewHttp.copyFlushing(fromSandbox, out);
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
    void end(PreviewStream s) {
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

    /** Closes streams whose sandbox did not start answering in time, that went idle, or that lived too long. */
    private void checkTimes() {
        long now = System.nanoTime();
        for (PreviewStream s : streams) {
            if (overdue(s, now)) {
                s.timedOut.set(true);
                end(s);
            }
        }
    }

    /**
     * Whether {@code s} is to be ended at {@code now} ({@link System#nanoTime()}): no first byte of
     * the answer within {@link #FIRST_BYTE}, no byte either way within {@link #IDLE}, or open longer
     * than {@link #LIFETIME} however busy.
     */
    static boolean overdue(PreviewStream s, long now) {
        long quiet = now - s.lastActivity;
        return (!s.answered && quiet > FIRST_BYTE.toNanos()) || quiet > IDLE.toNanos() || now - s.started > LIFETIME.toNanos();
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

}

