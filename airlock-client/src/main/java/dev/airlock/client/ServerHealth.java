package dev.airlock.client;

/**
 * The answer of {@code GET /health}, which needs no token: use it to wait for a server that is
 * starting, or to check that a URL is an Airlock server at all.
 *
 * @param status    {@code ok} when the server is serving
 * @param sandboxes how many sandboxes it holds right now
 */
public record ServerHealth(String status, int sandboxes) {

    public boolean ok() {
        return "ok".equals(status);
    }
}
