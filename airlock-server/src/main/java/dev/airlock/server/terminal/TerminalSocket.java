package dev.airlock.server.terminal;

import dev.airlock.core.AirlockException;
import dev.airlock.core.ExecResult;
import dev.airlock.core.TerminalSize;
import dev.airlock.server.live.BackgroundProcess;
import dev.airlock.server.live.ExecutionRecords;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.ProcessTerminal;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.wire.Json;
import org.eclipse.jetty.websocket.api.Callback;
import org.eclipse.jetty.websocket.api.Session;
import org.eclipse.jetty.websocket.api.StatusCode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One WebSocket attached to the terminal of a background process
 * ({@code GET /v1/sandboxes/{id}/processes/{pid}/attach}, docs/rest-api.md). Binary messages from
 * the client are the terminal's input; text messages are JSON controls ({@code resize},
 * {@code ping}). The terminal's output goes to the client as binary messages; when the process
 * ends, a text message {@code {"type":"exit",...}} and a close with 1000.
 *
 * <p>Bounded: a client message over {@value #MAX_MESSAGE} bytes closes the socket (1009, by
 * Jetty); while {@value #MAX_PENDING} bytes of output wait for a client that does not take them,
 * further output is dropped for that socket (never held in memory; the process and the other
 * sockets are not slowed), and once it caught up the client gets {@code {"type":"dropped",
 * "bytes":N}} before the output goes on; no traffic either way for {@link #IDLE} closes it (1001).
 */
public final class TerminalSocket implements Session.Listener.AutoDemanding, ProcessTerminal.Screen {

    private static final Logger LOG = LoggerFactory.getLogger(TerminalSocket.class);
    /** The largest message a client may send, binary or text. */
    static final int MAX_MESSAGE = 64 * 1024;
    /** Output sent to the client and not yet written to its connection: past it, output is dropped for this socket. */
    static final long MAX_PENDING = 1024 * 1024;
    /** A socket without any message either way for this long is closed. */
    static final Duration IDLE = Duration.ofMinutes(10);
    private static final Set<String> RESIZE_FIELDS = Set.of("type", "rows", "cols");

    private final BackgroundProcess process;
    private final ProcessTerminal terminal;
    private final ManagedSandbox sandbox;
    private final ExecutionRecords records;
    private final Caller caller;
    private final AtomicLong pending = new AtomicLong();
    private final AtomicLong bytesIn = new AtomicLong();
    private final AtomicLong bytesOut = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean ended = new AtomicBoolean();
    /** Output dropped since the client last caught up; written by the output thread only. */
    private long dropped;
    private volatile Session session;
    private volatile boolean attached;

    public TerminalSocket(BackgroundProcess process, ManagedSandbox sandbox, ExecutionRecords records, Caller caller) {
        this.process = process;
        this.terminal = process.terminal();
        this.sandbox = sandbox;
        this.records = records;
        this.caller = caller;
    }

    @Override
    public void onWebSocketOpen(Session session) {
        this.session = session;
        session.setIdleTimeout(IDLE);
        session.setMaxBinaryMessageSize(MAX_MESSAGE);
        session.setMaxTextMessageSize(MAX_MESSAGE);
        Object refused = terminal.attach(this);
        if (refused instanceof AirlockException e) {
            session.close(StatusCode.TRY_AGAIN_LATER, e.getMessage(), Callback.NOOP);
            return;
        }
        attached = true;
        audit("attached", Map.of());
        if (refused instanceof ExecResult r) {
            exit(r);   // it ended between the check and the upgrade
        }
    }

    @Override
    public void onWebSocketBinary(ByteBuffer payload, Callback callback) {
        byte[] bytes = new byte[payload.remaining()];
        payload.get(bytes);
        bytesIn.addAndGet(bytes.length);
        try {
            if (bytes.length > 0) {
                process.execution().writeStdin(bytes);
            }
            callback.succeed();
        } catch (IOException e) {
            callback.fail(e);
            close(StatusCode.SERVER_ERROR, "cannot write to the terminal: the sandbox is gone");
        }
    }

    @Override
    public void onWebSocketText(String message) {
        String problem = control(message);
        if (problem != null) {
            close(StatusCode.POLICY_VIOLATION, problem);
        }
    }

    /** Carries out one control message; returns what was wrong with it, or null. */
    private String control(String message) {
        JsonNode n;
        try {
            n = Json.parseObject(message.getBytes(StandardCharsets.UTF_8), RESIZE_FIELDS);
        } catch (AirlockException e) {
            return "bad control message: " + e.getMessage();
        }
        String type = n.path("type").isString() ? n.get("type").asString() : "";
        switch (type) {
            case "ping" -> {
                return null;   // keeps the socket from idling out (a browser cannot send WebSocket pings)
            }
            case "resize" -> {
                try {
                    Double rows = Json.number(n, "rows");
                    Double cols = Json.number(n, "cols");
                    if (rows == null || cols == null || rows != Math.rint(rows) || cols != Math.rint(cols)) {
                        return "a resize needs whole numbers 'rows' and 'cols', such as {\"type\":\"resize\",\"rows\":24,\"cols\":80}";
                    }
                    process.execution().resize(new TerminalSize(rows.intValue(), cols.intValue()));
                    return null;
                } catch (AirlockException e) {
                    return e.getMessage();
                }
            }
            default -> {
                return "unknown control message type '" + Json.printable(type) + "': send {\"type\":\"resize\",\"rows\":R,\"cols\":C}"
                        + " or {\"type\":\"ping\"} as text, and the terminal's input as binary messages";
            }
        }
    }

    /**
     * Terminal output for the client (called on one thread, in order). What a client does not take
     * fast enough is dropped for it, not buffered; it is told how much once it caught up.
     */
    @Override
    public void output(byte[] chunk) {
        Session s = session;
        if (s == null || closed.get()) {
            return;
        }
        if (pending.get() + chunk.length > MAX_PENDING) {
            dropped += chunk.length;
            return;
        }
        if (dropped > 0) {
            // all of it is at GET .../processes/{pid}/stdout
            s.sendText(Json.object().put("type", "dropped").put("bytes", dropped).toString(), Callback.NOOP);
            dropped = 0;
        }
        pending.addAndGet(chunk.length);
        bytesOut.addAndGet(chunk.length);
        s.sendBinary(ByteBuffer.wrap(chunk), Callback.from(() -> pending.addAndGet(-chunk.length), failure -> pending.addAndGet(-chunk.length)));
    }

    /** The process ended: its exit as a text message, then a normal close. */
    @Override
    public void exit(ExecResult r) {
        Session s = session;
        if (s == null || closed.get()) {
            return;
        }
        if (r == ProcessTerminal.FAILED) {
            close(StatusCode.SERVER_ERROR, r.message());
            return;
        }
        // the result as GET .../processes/{pid} gives it, without the output (the socket carried it)
        ObjectNode message = Json.object().put("type", "exit");
        message.setAll(Json.result(r));
        message.remove("stdout");
        message.remove("stderr");
        s.sendText(message.toString(), Callback.from(() -> close(StatusCode.NORMAL, "the process ended"),
                failure -> close(StatusCode.NORMAL, "the process ended")));
    }

    private void close(int status, String reason) {
        Session s = session;
        if (s != null && closed.compareAndSet(false, true)) {
            s.close(status, reason, Callback.NOOP);
        }
    }

    @Override
    public void onWebSocketClose(int statusCode, String reason, Callback callback) {
        ended(statusCode, reason);
        callback.succeed();
    }

    @Override
    public void onWebSocketError(Throwable cause) {
        LOG.debug("terminal socket of process {} in sandbox {} failed: {}", process.id(), sandbox.id(), cause.toString());
        ended(StatusCode.ABNORMAL, cause.getMessage());
    }

    private void ended(int statusCode, String reason) {
        closed.set(true);
        terminal.detach(this);
        if (attached && ended.compareAndSet(false, true)) {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("status", statusCode);
            d.put("reason", reason == null ? "" : reason);
            d.put("bytesIn", bytesIn.get());
            d.put("bytesOut", bytesOut.get());
            audit("detached", d);
        }
    }

    private void audit(String event, Map<String, Object> more) {
        Caller.run(caller, () -> records.terminal(sandbox, process.id(), event, more));
    }
}
