package dev.airlock.server.http;

import dev.airlock.server.wire.Json;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Lines of JSON sent to a client as a producer makes them, for a door's streamed answer (a cell's
 * outputs). What produces them (an agent's reader thread) must never wait for a slow client, so
 * lines are only queued — bounded by what the producer is bounded by (a cell keeps at most the
 * sandbox's output limit) — and written by a writer thread of their own, with a heartbeat line
 * whenever none came for {@link #HEARTBEAT}: only a write to its connection tells that a client
 * went away, and then the thread that runs the producer is interrupted.
 */
public final class LineStream {

    /** How long a stream may stay silent before a heartbeat line is written. */
    public static final Duration HEARTBEAT = Duration.ofSeconds(2);
    private static final ObjectNode END = Json.object();

    private final LinkedBlockingQueue<ObjectNode> lines = new LinkedBlockingQueue<>();
    private final ObjectNode heartbeat;

    /** @param heartbeat the line written while nothing else comes (one the client passes over) */
    public LineStream(ObjectNode heartbeat) {
        this.heartbeat = heartbeat;
    }

    /** Queues a line; never blocks. */
    public void add(ObjectNode line) {
        lines.add(line);
    }

    /** What runs while the lines are written: the producer. */
    @FunctionalInterface
    public interface Producer<R> {
        R run();
    }

    /**
     * Runs {@code producer} on this thread while a writer thread writes the queued lines to
     * {@code out}; returns its result once every line it queued was written. Throws the write's
     * failure when the client went away (the producer was interrupted then).
     */
    public <R> R run(OutputStream out, Producer<R> producer) throws IOException {
        Thread runner = Thread.currentThread();
        IOException[] failed = new IOException[1];
        Thread writer = Thread.ofVirtual().name("airlock-line-stream").start(() -> {
            try {
                while (true) {
                    ObjectNode line = lines.poll(HEARTBEAT.toMillis(), TimeUnit.MILLISECONDS);
                    if (line == END) {
                        return;
                    }
                    write(out, line == null ? heartbeat : line);
                }
            } catch (IOException e) {
                failed[0] = e;
                runner.interrupt(); // the client went away: stop the producer
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        R result;
        try {
            result = producer.run();
        } finally {
            lines.add(END);
            try {
                writer.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (failed[0] != null) {
            Thread.interrupted();
            throw failed[0];
        }
        return result;
    }

    /** Writes one line now and flushes it. */
    public static void write(OutputStream out, ObjectNode line) throws IOException {
        out.write((line.toString() + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
