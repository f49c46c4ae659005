package dev.airlock.agent;

import dev.airlock.core.AirlockException;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The host side of the agent protocol (docs/agent-protocol.md) over one connected unix socket.
 *
 * <p>One virtual thread reads every frame and hands it to the request it answers; another writes
 * the frames callers queue, in order. Everything the agent sends is hostile input: a frame that is too long,
 * of an unknown type, for an unknown id, or of the wrong shape closes the connection and fails
 * every pending request with an {@link IOException}.
 */
public final class AgentClient implements SandboxAgent {

    static final int PROTOCOL_VERSION = 1;
    /** How long the agent may take to answer EXEC or WRITE_FILE before the connection is given up. */
    static final Duration REPLY_TIMEOUT = Duration.ofMinutes(2);
    private static final int MAX_MESSAGE_CHARS = 200;

    private final SocketChannel channel;
    private final LinkedBlockingQueue<ByteBuffer> outbox = new LinkedBlockingQueue<>();
    private volatile Thread writer;
    private final Map<Integer, PendingRequest> pending = new ConcurrentHashMap<>();
    private final AtomicInteger nextId = new AtomicInteger(1);
    private final CompletableFuture<Integer> hello = new CompletableFuture<>();
    /** Why the connection ended; null while open. */
    private final AtomicReference<IOException> closed = new AtomicReference<>();

    private AgentClient(SocketChannel channel) {
        this.channel = channel;
    }

    /**
     * Wraps a connection the agent just opened and waits for its HELLO.
     *
     * @throws IOException if HELLO does not come within {@code helloTimeout}, or is not version 1;
     *                     the channel is closed then
     */
    public static AgentClient connect(SocketChannel channel, Duration helloTimeout) throws IOException, InterruptedException {
        channel.configureBlocking(true);
        AgentClient client = new AgentClient(channel);
        Thread.ofVirtual().name("airlock-agent-reader").start(client::readLoop);
        client.writer = Thread.ofVirtual().name("airlock-agent-writer").start(client::writeLoop);
        try {
            client.await(client.hello, helloTimeout, "HELLO");
        } catch (IOException | InterruptedException e) {
            client.close();
            throw e;
        }
        return client;
    }

    @Override
    public AgentProcess start(ExecRequest request, OutputListener listener) throws IOException {
        int id = nextId.getAndIncrement();
        // Sorted, so that the same request always gives the same environment order.
        var env = new TreeMap<>(request.env()).entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList();
        ByteBuffer frame = new FrameBuilder(Frame.EXEC, "the command with its environment")
                .u32(id).strings(request.argv()).strings(env).string(request.cwd()).build();
        RemoteProcess process = new RemoteProcess(this, id, listener);
        register(id, process);
        try {
            send(frame);
            process.awaitStarted(request.argv().getFirst());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting " + request.argv().getFirst(), e);
        }
        return process;
    }

    @Override
    public void writeFile(String path, byte[] content, int mode) throws IOException {
        if (!path.startsWith("/")) {
            throw AirlockException.invalid("file path '" + path + "' must be absolute");
        }
        if ((mode & ~07777) != 0) {
            throw AirlockException.invalid("file mode " + Integer.toOctalString(mode) + " is not a permission mode");
        }
        int id = nextId.getAndIncrement();
        ByteBuffer frame = new FrameBuilder(Frame.WRITE_FILE, "file " + path)
                .u32(id).string(path).u32(mode).bytes(content, 0, content.length).build();
        PendingFileWrite write = new PendingFileWrite(path);
        register(id, write);
        try {
            send(frame);
            awaitReply(write.result(), "writing " + path);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while writing " + path, e);
        }
    }

    @Override
    public boolean isOpen() {
        return closed.get() == null;
    }

    @Override
    public void close() {
        shutDown(new IOException("the connection to the agent was closed"));
    }

    /**
     * Queues one frame for the writer thread. Callers never write to the channel themselves: an
     * interrupted caller (a cancelled execution) would close a channel it was blocked in, and with
     * it every other execution of the sandbox.
     */
    void send(ByteBuffer frame) throws IOException {
        IOException why = closed.get();
        if (why != null) {
            throw new IOException(why.getMessage(), why);
        }
        outbox.add(frame);
    }

    private void writeLoop() {
        try {
            while (closed.get() == null) {
                ByteBuffer frame = outbox.take();
                while (frame.hasRemaining()) {
                    channel.write(frame);
                }
            }
        } catch (InterruptedException e) {
            shutDown(new IOException("the writer to the agent was stopped"));
        } catch (IOException e) {
            shutDown(new IOException("cannot write to the agent: " + e.getMessage(), e));
        }
    }

    /** Waits for an answer to EXEC or WRITE_FILE. An agent that does not answer is given up on. */
    <T> T awaitReply(CompletableFuture<T> reply, String what) throws IOException, InterruptedException {
        return await(reply, REPLY_TIMEOUT, what);
    }

    private <T> T await(CompletableFuture<T> reply, Duration timeout, String what) throws IOException, InterruptedException {
        try {
            return reply.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            IOException failure = new IOException("the agent did not answer " + what + " within " + timeout);
            shutDown(failure);
            throw failure;
        } catch (ExecutionException e) {
            // A fresh exception, so the caller's stack shows where it waited.
            throw new IOException(e.getCause().getMessage(), e.getCause());
        }
    }

    private void register(int id, PendingRequest request) throws IOException {
        pending.put(id, request);
        // close() may have run between the caller's check and the put: fail the request then.
        IOException why = closed.get();
        if (why != null) {
            pending.remove(id);
            throw new IOException(why.getMessage(), why);
        }
    }

    /** Closes the channel once and fails everything still waiting with {@code why}. */
    private void shutDown(IOException why) {
        if (!closed.compareAndSet(null, why)) {
            return;
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // Closing is all that is left to do; there is no one to tell.
        }
        Thread w = writer;
        if (w != null) {
            w.interrupt();
        }
        hello.completeExceptionally(why);
        pending.values().forEach(request -> request.fail(why));
        pending.clear();
    }

    private void readLoop() {
        try {
            while (true) {
                dispatch(Frame.read(channel));
            }
        } catch (AgentProtocolException e) {
            shutDown(e);
        } catch (EOFException e) {
            shutDown(new IOException("the agent closed the connection"));
        } catch (ClosedChannelException e) {
            shutDown(new IOException("the connection to the agent was closed"));
        } catch (IOException e) {
            shutDown(new IOException("cannot read from the agent: " + e.getMessage(), e));
        } catch (RuntimeException e) {
            shutDown(new IOException("agent connection failed: " + e, e));
        }
    }

    private void dispatch(Frame frame) throws AgentProtocolException {
        ByteBuffer payload = frame.payload();
        if (!hello.isDone()) {
            if (frame.type() != Frame.HELLO || payload.remaining() != 4) {
                throw new AgentProtocolException("expected HELLO, got frame type " + frame.type());
            }
            int version = payload.getInt();
            if (version != PROTOCOL_VERSION) {
                throw new AgentProtocolException("agent speaks protocol version " + Integer.toUnsignedString(version)
                        + ", this host speaks " + PROTOCOL_VERSION);
            }
            hello.complete(version);
            return;
        }
        int id = u32(payload, frame);
        boolean fits = switch (frame.type()) {
            case Frame.STARTED -> exactly(payload, 4, frame) && process(id, frame).onStarted(payload.getInt());
            case Frame.STDOUT, Frame.STDERR -> {
                if (payload.remaining() > Frame.MAX_OUTPUT_CHUNK) {
                    throw new AgentProtocolException("output chunk of " + payload.remaining() + " bytes is over "
                            + Frame.MAX_OUTPUT_CHUNK);
                }
                byte[] chunk = new byte[payload.remaining()];
                payload.get(chunk);
                yield process(id, frame).onOutput(frame.type() == Frame.STDOUT, chunk);
            }
            case Frame.EXIT -> {
                exactly(payload, 8, frame);
                boolean ok = process(id, frame).onExit(payload.getInt(), payload.getInt());
                pending.remove(id);
                yield ok;
            }
            case Frame.FAILED -> {
                String message = sanitize(string(payload, frame));
                exactly(payload, 0, frame);
                yield switch (pending.remove(id)) {
                    case RemoteProcess process -> process.onStartFailed(message);
                    case PendingFileWrite write -> write.result().completeExceptionally(
                            new IOException("cannot write " + write.path() + " in the sandbox: " + message));
                    case null -> throw unknownId(id, frame);
                };
            }
            case Frame.DONE -> {
                exactly(payload, 0, frame);
                yield pending.remove(id) instanceof PendingFileWrite write && write.result().complete(null);
            }
            default -> throw new AgentProtocolException("unknown frame type " + frame.type());
        };
        if (!fits) {
            throw new AgentProtocolException("frame type " + frame.type() + " does not fit the state of request " + id);
        }
    }

    private RemoteProcess process(int id, Frame frame) throws AgentProtocolException {
        if (pending.get(id) instanceof RemoteProcess process) {
            return process;
        }
        throw unknownId(id, frame);
    }

    private static AgentProtocolException unknownId(int id, Frame frame) {
        return new AgentProtocolException("frame type " + frame.type() + " for unknown id " + Integer.toUnsignedString(id));
    }

    private static int u32(ByteBuffer payload, Frame frame) throws AgentProtocolException {
        if (payload.remaining() < 4) {
            throw new AgentProtocolException("frame type " + frame.type() + " is too short");
        }
        return payload.getInt();
    }

    private static String string(ByteBuffer payload, Frame frame) throws AgentProtocolException {
        int length = u32(payload, frame);
        if (length < 0 || length > payload.remaining()) {
            throw new AgentProtocolException("string in frame type " + frame.type() + " is longer than the frame");
        }
        byte[] bytes = new byte[length];
        payload.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** Checks that exactly {@code bytes} payload bytes are left. */
    private static boolean exactly(ByteBuffer payload, int bytes, Frame frame) throws AgentProtocolException {
        if (payload.remaining() != bytes) {
            throw new AgentProtocolException("frame type " + frame.type() + " has the wrong length");
        }
        return true;
    }

    /** Agent text ends up in logs and in answers to users: keep it short and printable. */
    static String sanitize(String message) {
        StringBuilder out = new StringBuilder(Math.min(message.length(), MAX_MESSAGE_CHARS));
        for (int i = 0; i < message.length() && out.length() < MAX_MESSAGE_CHARS; i++) {
            char c = message.charAt(i);
            out.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        return out.toString();
    }
}
