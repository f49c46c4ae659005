package dev.airlock.server.http;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;
import java.time.Duration;

/**
 * Reads what is left of a request's body after an answer that did not read it (a refusal: wrong
 * token, unknown MCP session, no such endpoint), before the answer goes out. Left unread, Jetty
 * closes the connection; if the body's bytes reach the server as it closes, its kernel answers with
 * a reset and the client's kernel drops the answer it had not read yet: the client sees its
 * connection cut instead of the refusal, and a client that keeps connections alive may find the
 * next request on it fails. Drained, the connection stays usable.
 * <p>A refused client can make the server read at most {@link #MAX} bytes for at most {@link #WAIT}
 * per request; a longer or slower body closes the connection ({@code Connection: close}) as before.
 * A client that sent {@code Expect: 100-continue} is left to Jetty: it sends no body unless told
 * to go on, and a refusal should not tell it to.
 */
public final class UnreadBodies implements Filter {

    static final long MAX = 1 << 20;
    static final Duration WAIT = Duration.ofSeconds(2);

    @Override
    public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        chain.doFilter(request, response);
        HttpServletRequest req = (HttpServletRequest) request;
        HttpServletResponse resp = (HttpServletResponse) response;
        long length = req.getContentLengthLong();
        if (length == 0 || length < 0 && req.getHeader("Transfer-Encoding") == null) {
            return; // no body (most requests): nothing to read
        }
        if (req.isAsyncStarted() || resp.getStatus() == HttpServletResponse.SC_SWITCHING_PROTOCOLS || resp.isCommitted()
                || "close".equalsIgnoreCase(resp.getHeader("Connection"))
                || req.getHeader("Expect") != null) {
            return; // streaming or upgraded: its own business; committed or closing: too late or not needed
        }
        if (!BodyReader.drain(req, MAX, WAIT)) {
            resp.setHeader("Connection", "close");
        }
    }
}
