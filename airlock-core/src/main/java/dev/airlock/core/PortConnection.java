package dev.airlock.core;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * One TCP connection to a server listening inside a sandbox, opened by {@link SandboxAgent#connect}
 * and carried over the agent's channel (the sandbox needs no network device for it). Each direction
 * is flow-controlled on its own: the host holds a bounded amount of the sandbox's unread bytes, so a
 * slow reader here slows only the sandbox's writer on this connection.
 */
public interface PortConnection extends Closeable {

    /**
     * The bytes the server inside sends, in order; {@code read} returns -1 once it closed its
     * sending side (or shut it down), and throws an {@link IOException} if the connection was reset
     * or the agent's channel closed.
     */
    InputStream input();

    /**
     * To the server inside. Writes block while the server is not reading (the window the agent
     * gives is full). {@code close()} of this stream half-closes the connection: the server reads
     * end-of-file ({@code shutdown(SHUT_WR)} inside) while {@link #input()} keeps delivering.
     */
    OutputStream output();

    /** Ends both directions (the connection is reset inside if it was not ended cleanly). Idempotent. */
    @Override
    void close();

    /**
     * The agent could not open the connection or refused to: {@link #errno()} says why, e.g.
     * {@code ECONNREFUSED} (nothing listens on the port), {@code ETIMEDOUT}, or {@code EMFILE} (the
     * agent already carries its most port connections at once).
     */
    class RefusedException extends IOException {
        private final String errno;

        public RefusedException(String errno, String message) {
            super(message);
            this.errno = errno;
        }

        /** The symbolic errno the agent reported. */
        public String errno() {
            return errno;
        }
    }
}
