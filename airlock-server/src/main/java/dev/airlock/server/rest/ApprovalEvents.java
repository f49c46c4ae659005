package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.function.Supplier;

/**
 * {@code GET /v1/approvals/events}: a server-sent-event stream that sends the pending approvals
 * (what {@code GET /v1/approvals} answers) at once and again whenever one is requested or decided,
 * so that a person sees what waits without reloading. Bounded: at most {@link #MAX_STREAMS} open
 * streams in all and {@link #MAX_PER_CLIENT} of one client (so that one client cannot take them
 * all; the next is refused with 429), a comment line every {@link #HEARTBEAT} (which
 * also notices a client that went away), and each stream ends after {@link #MAX_DURATION}; the
 * browser's EventSource reconnects by itself.
 */
final class ApprovalEvents implements AutoCloseable {

    static final int MAX_STREAMS = 32;
    static final int MAX_PER_CLIENT = 4;
    static final Duration HEARTBEAT = Duration.ofSeconds(15);
    static final Duration MAX_DURATION = Duration.ofMinutes(30);

    private final Semaphore streams = new Semaphore(MAX_STREAMS);
    private final Map<String, Integer> perClient = new HashMap<>();
    private final Object monitor = new Object();
    private long version;
    private boolean closed;

    /** An approval was requested or decided: every stream sends the list again. */
    void changed() {
        synchronized (monitor) {
            version++;
            monitor.notifyAll();
        }
    }

    /** Ends every stream (the server stops). */
    @Override
    public void close() {
        synchronized (monitor) {
            closed = true;
            monitor.notifyAll();
        }
    }

    /**
     * Writes the stream to {@code out} until the client goes away, the stream's time is up or the
     * server stops; {@code pending} gives the JSON of the pending approvals, as {@code client} sees them.
     */
    void stream(String client, OutputStream out, Supplier<byte[]> pending) throws IOException {
        synchronized (perClient) {
            if (perClient.getOrDefault(client, 0) >= MAX_PER_CLIENT) {
                throw new AirlockException(Kind.LIMIT_EXCEEDED, "client " + client + " has " + MAX_PER_CLIENT + " approval event streams"
                        + " open (the bound per client): close one, or poll GET /v1/approvals instead");
            }
            if (!streams.tryAcquire()) {
                throw new AirlockException(Kind.LIMIT_EXCEEDED, "the server has " + MAX_STREAMS + " approval event streams open (its bound):"
                        + " close one, or poll GET /v1/approvals instead");
            }
            perClient.merge(client, 1, Integer::sum);
        }
        try {
            long end = System.nanoTime() + MAX_DURATION.toNanos();
            long sent = -1;
            out.write(("retry: 2000\n\n").getBytes(StandardCharsets.UTF_8));
            while (System.nanoTime() < end) {
                long now;
                synchronized (monitor) {
                    if (closed) {
                        return;
                    }
                    now = version;
                }
                if (now != sent) {
                    sent = now;
                    out.write("event: approvals\ndata: ".getBytes(StandardCharsets.UTF_8));
                    out.write(pending.get());
                    out.write("\n\n".getBytes(StandardCharsets.UTF_8));
                } else {
                    out.write(": heartbeat\n\n".getBytes(StandardCharsets.UTF_8));
                }
                out.flush();
                synchronized (monitor) {
                    if (version == sent && !closed) {
                        monitor.wait(HEARTBEAT.toMillis());
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            synchronized (perClient) {
                perClient.computeIfPresent(client, (k, n) -> n == 1 ? null : n - 1);
                streams.release();
            }
        }
    }
}
