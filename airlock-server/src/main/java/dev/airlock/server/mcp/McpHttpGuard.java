package dev.airlock.server.mcp;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.server.http.BodyReader;
import dev.airlock.server.http.LocalOrigin;
import dev.airlock.server.policy.Client;
import dev.airlock.server.command.CommandApi;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import tools.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What stands in front of the SDK's MCP servlet:
 * <ol>
 *   <li>DNS-rebinding protection ({@link LocalOrigin}, shared with the console): the Host header must
 *       name this server, and an Origin header, if sent, must be a loopback origin.</li>
 *   <li>The bearer token of a policy client, as on the REST API; the request goes to that client's own MCP server.</li>
 *   <li>Sessions that ended here (idle, or closed), and ids never opened for this client, are refused
 *       with 404, so the client starts anew; an unknown id creates no state. A client that holds its
 *       most sessions ({@link SessionSandboxes#MAX_SESSIONS_PER_CLIENT}), all busy, gets 429.</li>
 *   <li>Each message body passes through {@link InboundMessages} (cancellations, call keys).</li>
 * </ol>
 * Refusals are JSON-RPC error objects, so MCP clients can show them.
 */
final class McpHttpGuard implements Filter {

    /** A tool call carries code and files; 32 MiB is the REST API's JSON limit too. */
    static final int MAX_BODY = 32 * 1024 * 1024;
    private static final String TOO_LARGE = "request body is over " + MAX_BODY + " bytes: write large files in parts with sandbox_write_file";
    static final String SESSION_HEADER = "Mcp-Session-Id";

    private final String bindHost;
    private final CommandApi service;
    private final Map<String, HttpServlet> transports;
    private final String authHint;
    private final InboundMessages inbound;
    private final SessionSandboxes sessions;

    McpHttpGuard(String bindHost, CommandApi service, Map<String, HttpServlet> transports, String authHint, InboundMessages inbound,
                 SessionSandboxes sessions) {
        this.bindHost = bindHost;
        this.service = service;
        this.transports = transports;
        this.authHint = authHint;
        this.inbound = inbound;
        this.sessions = sessions;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        HttpServletRequest req = (HttpServletRequest) request;
        HttpServletResponse resp = (HttpServletResponse) response;
        String notLocal = LocalOrigin.refusal(req, bindHost);
        if (notLocal != null) {
            refuse(resp, 403, notLocal);
            return;
        }
        Client client = service.policy().authenticate(req.getHeader("Authorization")).orElse(null);
        if (client == null) {
            // no client: an unauthenticated request names none that could be trusted
            service.refuseUnauthenticated(McpServers.HTTP, McpServers.HTTP, req.getMethod() + " " + McpHttpEndpoint.PATH, req.getRemoteAddr(),
                    req.getHeader("Authorization") != null);
            resp.setHeader("WWW-Authenticate", "Bearer");
            refuse(resp, 401, "missing or wrong bearer token: " + authHint);
            return;
        }
        String session = req.getHeader(SESSION_HEADER);
        if (session != null && sessions.hasEnded(session)) {
            refuse(resp, 404, "MCP session " + Printable.of(session, 100) + " has ended and its sandboxes were destroyed: start a new session");
            return;
        }
        String owner = session == null ? null : sessions.clientOf(session);
        if (session != null && !client.name().equals(owner)) {
            // never opened, or another client's: as unknown to this client as one that never existed
            refuse(resp, 404, "MCP session " + Printable.of(session, 100) + " does not exist for this client: start a new session");
            return;
        }
        if (session == null && "POST".equals(req.getMethod()) && !sessions.mayOpen(client.name())) {
            refuse(resp, 429, "client '" + client.name() + "' holds " + SessionSandboxes.MAX_SESSIONS_PER_CLIENT
                    + " MCP sessions, all busy (the per-client session bound): end one with DELETE, or wait for one to finish");
            return;
        }
        HttpServletRequest forwarded = req;
        String callKey = null;
        if ("POST".equals(req.getMethod())) {
            Charset charset = charset(req);
            byte[] body;
            try {
                body = BodyReader.read(req, MAX_BODY, TOO_LARGE);
            } catch (BodyReader.TooSlow e) {
                resp.setHeader("Connection", "close");
                refuse(resp, 408, e.getMessage());
                return;
            } catch (AirlockException e) {
                refuse(resp, 413, e.getMessage());
                return;
            }
            String message = new String(body, charset);
            String unreadable = JsonRpcCheck.refusal(message);
            if (unreadable != null) {
                refuse(resp, 400, unreadable);
                return;
            }
            // observed only once readable: a call it starts tracking is forgotten when this request ends, below
            InboundMessages.Observed seen = inbound.observe(session == null ? "" : session, message);
            callKey = seen.callKey();
            forwarded = new BodyRequest(req, seen.message().getBytes(charset), charset);
        }
        if (session != null) {
            sessions.requestStarted(session);
        }
        String call = callKey;
        HttpServlet transport = transports.get(client.name());
        ClaimingResponse answered = session == null ? new ClaimingResponse(resp, sessions, client.name()) : null;
        try {
            transport.service(forwarded, answered == null ? resp : answered);
            if (answered != null && answered.evicted() != null) {
                TransportSessionCloser.close(transport, req, resp, answered.evicted());
            }
        } finally {
            if (session != null) {
                Runnable ended = () -> {
                    sessions.requestEnded(session);
                    inbound.requestEnded(call);
                };
                if (forwarded.isAsyncStarted()) {
                    forwarded.getAsyncContext().addListener(new Ended(ended));
                } else {
                    ended.run();
                }
            }
        }
        if ("DELETE".equals(req.getMethod()) && session != null && resp.getStatus() < 300) {
            sessions.end(session, "was closed by the client");
        }
    }

    private static Charset charset(HttpServletRequest req) {
        try {
            return req.getCharacterEncoding() == null ? StandardCharsets.UTF_8 : Charset.forName(req.getCharacterEncoding());
        } catch (RuntimeException e) {
            return StandardCharsets.UTF_8;
        }
    }

    private static void refuse(HttpServletResponse resp, int status, String message) throws IOException {
        ObjectNode body = ToolResults.JSON.createObjectNode();
        body.put("jsonrpc", "2.0");
        body.putNull("id");
        ObjectNode error = body.putObject("error");
        error.put("code", -32000);
        error.put("message", message);
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(body.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** The request with its body already read (and perhaps rewritten). */
    private static final class BodyRequest extends HttpServletRequestWrapper {
        private final byte[] body;
        private final Charset charset;

        BodyRequest(HttpServletRequest request, byte[] body, Charset charset) {
            super(request);
            this.body = body;
            this.charset = charset;
        }

        @Override
        public int getContentLength() {
            return body.length;
        }

        @Override
        public long getContentLengthLong() {
            return body.length;
        }

        @Override
        public ServletInputStream getInputStream() {
            ByteArrayInputStream in = new ByteArrayInputStream(body);
            return new ServletInputStream() {
                @Override
                public boolean isFinished() {
                    return in.available() == 0;
                }

                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setReadListener(ReadListener listener) {
                    throw new IllegalStateException("the body was already read");
                }

                @Override
                public int read() {
                    return in.read();
                }

                @Override
                public int read(byte[] b, int off, int len) {
                    return in.read(b, off, len);
                }
            };
        }

        @Override
        public BufferedReader getReader() {
            return new BufferedReader(new InputStreamReader(new ByteArrayInputStream(body), charset));
        }
    }

    /** Runs once when an asynchronous response ends, however it ends. */
    private record Ended(Runnable action, AtomicBoolean done) implements AsyncListener {
        Ended(Runnable action) {
            this(action, new AtomicBoolean());
        }

        private void run() {
            if (done.compareAndSet(false, true)) {
                action.run();
            }
        }

        @Override
        public void onComplete(AsyncEvent event) {
            run();
        }

        @Override
        public void onTimeout(AsyncEvent event) {
            run();
        }

        @Override
        public void onError(AsyncEvent event) {
            run();
        }

        @Override
        public void onStartAsync(AsyncEvent event) {
        }
    }
}
