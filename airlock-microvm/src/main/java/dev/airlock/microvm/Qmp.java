package dev.airlock.microvm;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

/**
 * The host's end of one guest's QEMU Machine Protocol socket (QMP: one JSON object a line): how the
 * driver stops, saves and continues a guest. Commands go one at a time ({@code synchronized}); the
 * events QEMU sends between replies are skipped. Bounded: a line longer than {@link #MAX_LINE} or
 * a reply later than the caller's timeout ends the connection, never the host.
 */
final class Qmp implements AutoCloseable {

    /** QMP's replies here are short (a status, a migration's counters): a line past this is not QEMU's. */
    static final int MAX_LINE = 1 << 20;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final SocketChannel channel;
    private final Selector selector;
    private final ByteBuffer in = ByteBuffer.allocate(64 << 10);
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();

    private Qmp(SocketChannel channel) throws IOException {
        this.channel = channel;
        this.selector = Selector.open();
        channel.configureBlocking(false);
        channel.register(selector, SelectionKey.OP_READ);
    }

    /** Reads QEMU's greeting on {@code channel} and enters command mode. */
    static Qmp open(SocketChannel channel, Duration timeout) throws IOException {
        Qmp qmp;
        try {
            qmp = new Qmp(channel);
        } catch (IOException e) {
            channel.close();
            throw e;
        }
        try {
            JsonNode greeting = qmp.readLine(System.nanoTime() + timeout.toNanos());
            if (!greeting.has("QMP")) {
                throw new IOException("QEMU's QMP socket did not greet: " + greeting);
            }
            qmp.execute("qmp_capabilities", Map.of(), timeout);
            return qmp;
        } catch (IOException | RuntimeException e) {
            qmp.close();
            throw e;
        }
    }

    /** Runs {@code command} with {@code arguments}; its {@code return}, or an IOException with QEMU's error. */
    synchronized JsonNode execute(String command, Map<String, ?> arguments, Duration timeout) throws IOException {
        ObjectNode request = JSON.createObjectNode().put("execute", command);
        if (!arguments.isEmpty()) {
            request.set("arguments", JSON.valueToTree(arguments));
        }
        ByteBuffer out = ByteBuffer.wrap((JSON.writeValueAsString(request) + "\n").getBytes(StandardCharsets.UTF_8));
        while (out.hasRemaining()) {
            if (channel.write(out) == 0) {
                Thread.onSpinWait();    // a command is a few hundred bytes: QEMU's socket buffer takes it at once
            }
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            JsonNode reply = readLine(deadline);
            if (reply.has("event")) {
                continue;
            }
            if (reply.has("error")) {
                throw new IOException("QEMU refused " + command + ": " + reply.path("error").path("desc").asString());
            }
            if (reply.has("return")) {
                return reply.get("return");
            }
        }
    }

    private JsonNode readLine(long deadline) throws IOException {
        while (true) {
            in.flip();
            while (in.hasRemaining()) {
                byte b = in.get();
                if (b == '\n') {
                    in.compact();
                    JsonNode node = JSON.readTree(line.toString(StandardCharsets.UTF_8));
                    line.reset();
                    return node;
                }
                if (line.size() >= MAX_LINE) {
                    close();
                    throw new IOException("QEMU's QMP sent a line of more than " + MAX_LINE + " bytes");
                }
                line.write(b);
            }
            in.clear();
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                close();
                throw new IOException("QEMU's QMP did not answer in time");
            }
            selector.select(Math.max(1, left / 1_000_000));
            selector.selectedKeys().clear();
            if (channel.read(in) < 0) {
                throw new IOException("QEMU closed its QMP socket");
            }
        }
    }

    @Override
    public void close() {
        try {
            selector.close();
            channel.close();
        } catch (IOException ignored) {
            // nothing left to tell QEMU
        }
    }
}
