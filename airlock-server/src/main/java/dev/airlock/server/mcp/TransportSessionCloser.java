package dev.airlock.server.mcp;

import jakarta.servlet.ServletException;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.Writer;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;

/**
 * Makes the SDK's transport forget a session that ended here (evicted by the per-client bound),
 * so its own session map stays bounded too. The SDK 2.1 has no public way to drop a session but
 * the client's DELETE, so this hands the transport a DELETE for that session, built on the request
 * being served, whose answer goes nowhere.
 */
final class TransportSessionCloser {

    private static final Logger LOG = LoggerFactory.getLogger(TransportSessionCloser.class);

    private TransportSessionCloser() {
    }

    static void close(HttpServlet transport, HttpServletRequest carrier, HttpServletResponse response, String session) {
        try {
            transport.service(new DeleteRequest(carrier, session), new DiscardedResponse(response));
        } catch (IOException | ServletException | RuntimeException e) {
            LOG.debug("the MCP transport did not forget an evicted session: {}", e.toString());
        }
    }

    private static final class DeleteRequest extends HttpServletRequestWrapper {
        private final String session;

        DeleteRequest(HttpServletRequest request, String session) {
            super(request);
            this.session = session;
        }

        @Override
        public String getMethod() {
            return "DELETE";
        }

        @Override
        public String getHeader(String name) {
            return McpHttpGuard.SESSION_HEADER.equalsIgnoreCase(name) ? session : super.getHeader(name);
        }

        @Override
        public Enumeration<String> getHeaders(String name) {
            return McpHttpGuard.SESSION_HEADER.equalsIgnoreCase(name) ? Collections.enumeration(List.of(session))
                    : super.getHeaders(name);
        }
    }

    /** A response that writes nothing to the real one. */
    private static final class DiscardedResponse extends HttpServletResponseWrapper {
        DiscardedResponse(HttpServletResponse response) {
            super(response);
        }

        @Override
        public void setStatus(int sc) {
        }

        @Override
        public void sendError(int sc, String msg) {
        }

        @Override
        public void sendError(int sc) {
        }

        @Override
        public void setHeader(String name, String value) {
        }

        @Override
        public void addHeader(String name, String value) {
        }

        @Override
        public void setContentType(String type) {
        }

        @Override
        public void setCharacterEncoding(String charset) {
        }

        @Override
        public void setContentLength(int len) {
        }

        @Override
        public void setContentLengthLong(long len) {
        }

        @Override
        public void flushBuffer() {
        }

        @Override
        public PrintWriter getWriter() {
            return new PrintWriter(Writer.nullWriter());
        }

        @Override
        public ServletOutputStream getOutputStream() {
            return new ServletOutputStream() {
                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setWriteListener(WriteListener listener) {
                }

                @Override
                public void write(int b) {
                }
            };
        }
    }
}
