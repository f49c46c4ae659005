package dev.airlock.server.http;

import dev.airlock.core.AirlockException;
import jakarta.servlet.http.HttpServletRequest;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Request;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Reads a whole request body (JSON of the REST API, MCP messages) within a size and a deadline.
 * Jetty's idle timeout restarts with every byte, so a client trickling one byte a second would
 * hold a request, its buffer and its connection for as long as it liked; here the whole body must
 * arrive within {@link #DEADLINE}, or the request is refused with 408 and the connection closed.
 */
public final class BodyReader {

    /** The longest a request body may take to arrive: 32 MiB at a slow 2 MiB/s, with room to spare. */
    public static final Duration DEADLINE = Duration.ofSeconds(30);
    /**
     * How much of a body over its limit is read and dropped (within the deadline) before the 413:
     * closing a connection with unread bytes makes the client's kernel discard the answer, so the
     * client would see a reset instead of the refusal. Twice the JSON limit: any body up to that
     * gets its 413.
     */
    public static final long MAX_DRAIN = 64L << 20;

    private BodyReader() {
    }

    /** The body did not arrive within the deadline: answered 408. */
    public static final class TooSlow extends AirlockException {
        TooSlow(long received) {
            super(Kind.INVALID_ARGUMENT, "request body did not arrive within " + DEADLINE.toSeconds() + " s (" + received
                    + " bytes came): send the whole body at once");
        }
    }

    /** Takes one chunk's bytes; false to stop reading. */
    private interface Sink {
        boolean take(ByteBuffer bytes) throws IOException;
    }

    /**
     * The body of {@code req}, read within {@link #DEADLINE} ({@link TooSlow} beyond); beyond
     * {@code max} bytes, a {@code TOO_LARGE} refusal with {@code tooLarge} as its message.
     */
    public static byte[] read(HttpServletRequest req, int max, String tooLarge) throws IOException {
        // Jetty's own request, read without blocking, so that waiting for bytes can have a deadline.
        Request request = ServletContextRequest.getServletContextRequest(req);
        long end = System.nanoTime() + DEADLINE.toNanos();
        long declared = req.getContentLengthLong();
        if (declared <= max) {
            ByteArrayOutputStream body = new ByteArrayOutputStream((int) Math.min(Math.max(declared, 0), 64 * 1024));
            boolean whole = pump(request, end, bytes -> {
                byte[] part = new byte[Math.min(bytes.remaining(), max + 1 - body.size())];
                bytes.get(part);
                body.write(part);
                return body.size() <= max;
            }, body::size);
            if (whole) {
                return body.toByteArray();
            }
        }
        drain(request, MAX_DRAIN, end); // refused for its size whether or not the rest came
        throw new AirlockException(AirlockException.Kind.TOO_LARGE, tooLarge);
    }

    /**
     * Reads and drops what is left of the body of {@code req}: at most {@code max} bytes, waiting at
     * most {@code wait}. True when the body's end was reached (at once when it was read already).
     */
    static boolean drain(HttpServletRequest req, long max, Duration wait) {
        return drain(ServletContextRequest.getServletContextRequest(req), max, System.nanoTime() + wait.toNanos());
    }

    private static boolean drain(Request request, long max, long end) {
        long[] dropped = {0};
        try {
            return pump(request, end, bytes -> {
                dropped[0] += bytes.remaining();
                return dropped[0] <= max;
            }, () -> 0);
        } catch (TooSlow | IOException e) {
            return false;
        }
    }

    /** Feeds the body's chunks to {@code sink} until the last one (true) or until it stops (false). */
    private static boolean pump(Request request, long end, Sink sink, java.util.function.IntSupplier received) throws IOException {
        while (true) {
            Content.Chunk chunk = request.read();
            if (chunk == null) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    throw new TooSlow(received.getAsInt());
                }
                CountDownLatch ready = new CountDownLatch(1);
                request.demand(ready::countDown);
                try {
                    if (!ready.await(left, TimeUnit.NANOSECONDS)) {
                        throw new TooSlow(received.getAsInt());
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while reading the request body", e);
                }
                continue;
            }
            try {
                if (Content.Chunk.isFailure(chunk)) {
                    if (chunk.getFailure() instanceof TimeoutException) {
                        throw new TooSlow(received.getAsInt()); // Jetty's idle timeout: no byte for a while
                    }
                    throw new IOException("the request body could not be read: " + chunk.getFailure().getMessage(), chunk.getFailure());
                }
                if (!sink.take(chunk.getByteBuffer())) {
                    return false;
                }
                if (chunk.isLast()) {
                    return true;
                }
            } finally {
                chunk.release();
            }
        }
    }
}
