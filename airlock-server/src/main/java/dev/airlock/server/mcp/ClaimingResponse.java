package dev.airlock.server.mcp;

import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;

/**
 * The response to a request that named no session: when the SDK opens a session it sets the
 * {@code Mcp-Session-Id} header, and at that moment, before any byte reaches the client, the
 * session is recorded as the client's. So the client's next request, however quick, finds it
 * known; and nothing is recorded for a request that opened no session.
 */
final class ClaimingResponse extends HttpServletResponseWrapper {

    private final SessionSandboxes sessions;
    private final String client;
    private volatile String evicted;

    ClaimingResponse(HttpServletResponse response, SessionSandboxes sessions, String client) {
        super(response);
        this.sessions = sessions;
        this.client = client;
    }

    @Override
    public void setHeader(String name, String value) {
        super.setHeader(name, value);
        claimIfSession(name, value);
    }

    @Override
    public void addHeader(String name, String value) {
        super.addHeader(name, value);
        claimIfSession(name, value);
    }

    private void claimIfSession(String name, String value) {
        if (McpHttpGuard.SESSION_HEADER.equalsIgnoreCase(name) && value != null) {
            String e = sessions.claim(value, client);
            if (e != null) {
                evicted = e;
            }
        }
    }

    /** The client's session that opening this one ended, or null. */
    String evicted() {
        return evicted;
    }
}
