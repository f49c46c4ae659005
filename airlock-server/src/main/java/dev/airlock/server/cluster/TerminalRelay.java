package dev.airlock.server.cluster;

import org.eclipse.jetty.websocket.api.Callback;
import org.eclipse.jetty.websocket.api.Session;
import org.eclipse.jetty.websocket.api.StatusCode;

import java.io.ByteArrayOutputStream;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A terminal's WebSocket on one node carried to the node that holds the sandbox (docs/cluster.md,
 * "Between nodes"): the client's socket ends here, a second one runs over TLS to the other node's
 * peer port, signed like every call between nodes, and each message goes across as it is, in
 * order: from the other node, a message is asked for only once the one before was passed on to
 * the client; from the client, at most {@value #MAX_QUEUED} wait (Jetty reads on without waiting
 * for them), and a client that sends more is closed (TerminalRelayTest). Closing
 * either side closes the other with its status and reason.
 *
 * <p>Bounded: a message at most {@value #MAX_MESSAGE} bytes (the terminal's own limit), at most
 * {@value #MAX_QUEUED} of the client's messages waiting to go across (a client that sends faster
 * than the other node takes is closed), and the terminal's idle limit on the client's socket.
 * Public for Jetty, which calls its listener methods; made only by {@link NodeCalls}.
 */
public final class TerminalRelay implements Session.Listener.AutoDemanding {

    static final int MAX_MESSAGE = 64 * 1024;
    static final int MAX_QUEUED = 64;
    static final Duration IDLE = Duration.ofMinutes(10);

    private final Function<WebSocket.Listener, CompletableFuture<WebSocket>> connect;
    private final String node;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger queued = new AtomicInteger();
    private volatile Session client;
    private volatile CompletableFuture<WebSocket> upstream;
    /** The client's messages go across one after the other: the JDK's WebSocket sends one at a time. */
    private CompletableFuture<?> sending = CompletableFuture.completedFuture(null);

    /** {@code connect}: opens the socket to node {@code node}'s peer port with the given listener. */
    TerminalRelay(String node, Function<WebSocket.Listener, CompletableFuture<WebSocket>> connect) {
        this.node = node;
        this.connect = connect;
    }

    @Override
    public void onWebSocketOpen(Session session) {
        this.client = session;
        session.setIdleTimeout(IDLE);
        session.setMaxBinaryMessageSize(MAX_MESSAGE);
        session.setMaxTextMessageSize(MAX_MESSAGE);
        upstream = connect.apply(new Upstream());
        upstream.whenComplete((ws, failure) -> {
            if (failure != null) {
                closeClient(StatusCode.SERVER_ERROR, "cannot reach node '" + node + "', which holds the sandbox: " + failure.getMessage());
            }
        });
    }

    @Override
    public void onWebSocketBinary(ByteBuffer payload, Callback callback) {
        ByteBuffer copy = ByteBuffer.allocate(payload.remaining()).put(payload).flip();
        send(ws -> ws.sendBinary(copy, true)).whenComplete((ok, failure) -> {
            if (failure == null) {
                callback.succeed();
            } else {
                callback.fail(failure);
            }
        });
    }

    @Override
    public void onWebSocketText(String message) {
        send(ws -> ws.sendText(message, true));
    }

    private synchronized CompletableFuture<?> send(Function<WebSocket, CompletionStage<WebSocket>> message) {
        if (queued.incrementAndGet() > MAX_QUEUED) {
            closeClient(StatusCode.POLICY_VIOLATION, "more than " + MAX_QUEUED + " messages wait for node '" + node + "': send slower");
            return CompletableFuture.failedFuture(new IllegalStateException("relay closed"));
        }
        sending = sending.thenCompose(x -> upstream).thenCompose(message).whenComplete((ok, failure) -> queued.decrementAndGet());
        return sending;
    }

    @Override
    public void onWebSocketClose(int statusCode, String reason, Callback callback) {
        closed.set(true);
        CompletableFuture<WebSocket> up = upstream;
        if (up != null) {
            up.thenAccept(ws -> ws.sendClose(statusCode == StatusCode.NO_CODE ? WebSocket.NORMAL_CLOSURE : statusCode, reason == null ? "" : reason)
                    .exceptionally(e -> ws));
        }
        callback.succeed();
    }

    @Override
    public void onWebSocketError(Throwable cause) {
        closed.set(true);
        CompletableFuture<WebSocket> up = upstream;
        if (up != null) {
            up.thenAccept(WebSocket::abort);
        }
    }

    private void closeClient(int status, String reason) {
        Session s = client;
        if (s != null && closed.compareAndSet(false, true)) {
            s.close(status, reason.length() > 120 ? reason.substring(0, 120) : reason, Callback.NOOP);
        }
        CompletableFuture<WebSocket> up = upstream;
        if (up != null) {
            up.thenAccept(WebSocket::abort);
        }
    }

    /** The other node's side: each whole message to the client, the next asked for once the client's side took it. */
    private final class Upstream implements WebSocket.Listener {
        private final ByteArrayOutputStream binary = new ByteArrayOutputStream();
        private final StringBuilder text = new StringBuilder();

        @Override
        public void onOpen(WebSocket ws) {
            ws.request(1);
        }

        @Override
        public CompletionStage<?> onBinary(WebSocket ws, ByteBuffer data, boolean last) {
            if (binary.size() + data.remaining() > MAX_MESSAGE) {
                closeClient(StatusCode.MESSAGE_TOO_LARGE, "a message from node '" + node + "' is over " + MAX_MESSAGE + " bytes");
                return null;
            }
            byte[] bytes = new byte[data.remaining()];
            data.get(bytes);
            binary.write(bytes, 0, bytes.length);
            if (!last) {
                ws.request(1);
                return null;
            }
            ByteBuffer whole = ByteBuffer.wrap(binary.toByteArray());
            binary.reset();
            client.sendBinary(whole, Callback.from(() -> ws.request(1), failure -> ws.abort()));
            return null;
        }

        @Override
        public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
            if (text.length() + data.length() > MAX_MESSAGE) {
                closeClient(StatusCode.MESSAGE_TOO_LARGE, "a message from node '" + node + "' is over " + MAX_MESSAGE + " characters");
                return null;
            }
            text.append(data);
            if (!last) {
                ws.request(1);
                return null;
            }
            String whole = text.toString();
            text.setLength(0);
            client.sendText(whole, Callback.from(() -> ws.request(1), failure -> ws.abort()));
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket ws, int statusCode, String reason) {
            Session s = client;
            if (s != null && closed.compareAndSet(false, true)) {
                s.close(statusCode, reason, Callback.NOOP);
            }
            return null;
        }

        @Override
        public void onError(WebSocket ws, Throwable error) {
            closeClient(StatusCode.SERVER_ERROR, "the terminal's socket to node '" + node + "' failed: " + error.getMessage());
        }
    }
}
