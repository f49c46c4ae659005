package dev.airlock.client;

import tools.jackson.databind.JsonNode;

import java.io.ByteArrayOutputStream;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An attached terminal: a WebSocket to a background process running on a pseudo-terminal in a
 * sandbox ({@code GET /v1/sandboxes/{id}/processes/{pid}/attach}, docs/rest-api.md). What the
 * terminal shows goes to the {@link Listener}, in order, on the socket's thread; {@link #write}
 * types, {@link #resize} changes its size (the program gets SIGWINCH), {@link #awaitExit} waits for
 * the process's end. Closing it detaches; the process runs on (kill it with {@link #process()}).
 * Uses {@code java.net.http.WebSocket}; no other dependency.
 */
public final class Terminal implements AutoCloseable {

    /** What the terminal shows, and how the attachment ends. Called on the socket's thread, one call at a time. */
    @FunctionalInterface
    public interface Listener {
        /** Bytes the terminal shows (the program's output and the echo of what was typed, with its escape sequences). */
        void output(byte[] bytes);

        /**
         * The server dropped {@code bytes} of output because this client did not take it fast
         * enough (all of it is in the process's stdout); the output goes on after.
         */
        default void dropped(long bytes) {
        }

        /** The socket closed: after the process's exit (1000), or for another reason (the server's {@code reason} says which). */
        default void closed(int statusCode, String reason) {
        }
    }

    /** The largest message the server takes; longer input is sent in parts. */
    static final int MAX_MESSAGE = 64 * 1024;
    /** Most rows or columns of a terminal. */
    public static final int MAX_SIZE = 1000;

    private final BackgroundProcess process;
    private final Listener listener;
    private final CompletableFuture<ExecResult> exit = new CompletableFuture<>();
    private final CompletableFuture<Integer> closed = new CompletableFuture<>();
    private volatile String closeReason = "";
    private WebSocket socket;

    private Terminal(BackgroundProcess process, Listener listener) {
        this.process = process;
        this.listener = listener;
    }

    static Terminal open(Transport transport, String path, BackgroundProcess process, Listener listener) {
        Terminal t = new Terminal(process, listener);
        t.socket = transport.webSocket(path, t.new Receiver());
        return t;
    }

    static void checkSize(int rows, int cols) {
        if (rows < 1 || rows > MAX_SIZE || cols < 1 || cols > MAX_SIZE) {
            throw new IllegalArgumentException("terminal size " + rows + "x" + cols + " is out of range: give rows and cols from 1 to " + MAX_SIZE);
        }
    }

    /** The process this terminal belongs to. */
    public BackgroundProcess process() {
        return process;
    }

    /** Types {@code bytes} (a Ctrl-C is byte 3, Ctrl-D byte 4). */
    public synchronized void write(byte[] bytes) {
        for (int off = 0; off < bytes.length; off += MAX_MESSAGE) {
            int len = Math.min(MAX_MESSAGE, bytes.length - off);
            send(socket.sendBinary(ByteBuffer.wrap(bytes, off, len), true), "write to the terminal");
        }
    }

    /** Types {@code text}, encoded as UTF-8. */
    public void write(String text) {
        write(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Changes the terminal's size; its foreground program gets SIGWINCH. */
    public synchronized void resize(int rows, int cols) {
        checkSize(rows, cols);
        send(socket.sendText("{\"type\":\"resize\",\"rows\":" + rows + ",\"cols\":" + cols + "}", true), "resize the terminal");
    }

    private void send(CompletableFuture<WebSocket> sent, String what) {
        try {
            sent.get(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AirlockInterruptedException("interrupted while trying to " + what, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new AirlockConnectionException("cannot " + what + " of process " + process.id() + ": the terminal's socket is closed"
                    + (closeReason.isEmpty() ? "" : " (" + closeReason + ")"), e);
        }
    }

    /**
     * Waits until the process ends and the server closes the socket after its exit message, and
     * returns its result (its output is what the listener got); empty if {@code timeout} passed
     * before the exit, or the socket closed without one (see {@link #closeStatus()}).
     */
    public Optional<ExecResult> awaitExit(Duration timeout) {
        try {
            // the exit message comes just before the close (1000): the close is what is waited for
            closed.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AirlockInterruptedException("interrupted while waiting for process " + process.id() + " to end", e);
        } catch (TimeoutException | ExecutionException e) {
            // not closed in time: the exit may still have come
        }
        return Optional.ofNullable(exit.getNow(null));
    }

    /** The socket's close status (1000 after the exit), or empty while it is open. */
    public Optional<Integer> closeStatus() {
        return Optional.ofNullable(closed.getNow(null));
    }

    /** Why the socket closed, as the server said; empty while it is open. */
    public String closeReason() {
        return closeReason;
    }

    /** Detaches (the process runs on). */
    @Override
    public synchronized void close() {
        if (!closed.isDone()) {
            socket.sendClose(WebSocket.NORMAL_CLOSURE, "detached").exceptionally(x -> null);
            try {
                closed.get(5, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                // gone anyway
            }
            socket.abort();
        }
    }

    /** The socket's events: binary messages are output, text messages the server's controls. */
    private final class Receiver implements WebSocket.Listener {
        private final ByteArrayOutputStream binary = new ByteArrayOutputStream();
        private final StringBuilder text = new StringBuilder();

        @Override
        public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
            byte[] part = new byte[data.remaining()];
            data.get(part);
            binary.writeBytes(part);
            if (last) {
                byte[] message = binary.toByteArray();
                binary.reset();
                listener.output(message);
            }
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            text.append(data);
            if (last) {
                String message = text.toString();
                text.setLength(0);
                JsonNode n = Json.MAPPER.readTree(message);
                String type = n.path("type").asString();
                if ("exit".equals(type)) {
                    exit.complete(Json.result(n));
                } else if ("dropped".equals(type)) {
                    listener.dropped(n.path("bytes").asLong());
                }
            }
            ws.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
            closeReason = reason == null ? "" : reason;
            try {
                listener.closed(statusCode, closeReason);
            } finally {
                closed.complete(statusCode);
            }
            return null;
        }

        @Override
        public void onError(WebSocket ws, Throwable error) {
            closeReason = String.valueOf(error.getMessage());
            closed.complete(1006);   // abnormal: no close frame
        }
    }
}
