package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxAgent;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
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

    /** 3: EXEC_HELD, FORKED and RELEASE (an execution placed by the host before it execs); READ_FILE carries flags; WALK and KILL_ALL. 2: FAILED carries an errno; WRITE_FILE carries flags; file requests 20-25. */
    static final int PROTOCOL_VERSION = 3;
    /** How long the agent may take to answer a request (or send the next chunk of a file) before the connection is given up. */
    static final Duration REPLY_TIMEOUT = Duration.ofMinutes(2);
    /** Agent text ends up in logs and in answers to users: keep it this short (and printable). */
    static final int MAX_MESSAGE_CHARS = 200;
    /** Longest name or link target a FILEINFO may carry, in bytes: bounds what a LIST can make us hold. */
    private static final int MAX_FILEINFO_STRING = Frame.PATH_MAX;

    private final SocketChannel channel;
    private final LinkedBlockingQueue<ByteBuffer> outbox = new LinkedBlockingQueue<>();
    private volatile Thread writer;
    private final Map<Integer, PendingRequest> pending = new ConcurrentHashMap<>();
    private final AtomicInteger nextId = new AtomicInteger(1);
    private final CompletableFuture<Integer> hello = new CompletableFuture<>();
    /** Why the connection ended; null while open. */
    private final AtomicReference<IOException> closed = new AtomicReference<>();
    private final AgentFiles files = new AgentFiles(this);

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
        return start(request, listener, null);
    }

    /**
     * Starts {@code request} like {@link #start(ExecRequest, OutputListener)}, but the agent holds
     * the forked process until {@code placement} has put it in place; only then may it exec the
     * command. A placement that throws ends the process unstarted and its exception is rethrown.
     * Costs one more round trip to the agent than a plain start.
     *
     * @param placement null for a plain start
     */
    public AgentProcess start(ExecRequest request, OutputListener listener, ExecPlacement placement) throws IOException {
        int id = nextId.getAndIncrement();
        // Sorted, so that the same request always gives the same environment order.
        var env = new TreeMap<>(request.env()).entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList();
        ByteBuffer frame = new FrameBuilder(placement == null ? Frame.EXEC : Frame.EXEC_HELD, "the command with its environment")
                .u32(id).strings(request.argv()).strings(env).string(request.cwd()).build();
        RemoteProcess process = new RemoteProcess(this, id, listener, placement);
        register(id, process);
        send(frame);
        // Once EXEC is sent the process may exist: the caller must get its handle to kill it, so an
        // interrupt waits for the (quick) answers and is passed on afterwards.
        boolean interrupted = false;
        try {
            // A held process is placed and released by the reader thread when FORKED comes.
            while (true) {
                try {
                    process.awaitStarted(request.argv().getFirst());
                    if (process.placementFailure() != null) {
                        throw process.placementFailure();
                    }
                    return process;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void writeFile(String path, byte[] content, int mode) throws IOException {
        files.writeFile(path, new ByteArrayInputStream(content), content.length, mode);
    }

    @Override
    public long writeFile(String path, InputStream content, long maxBytes, int mode) throws IOException {
        return files.writeFile(path, content, maxBytes, mode);
    }

    @Override
    public void readFile(String path, long maxBytes, OutputStream sink) throws IOException {
        files.readFile(path, maxBytes, sink, false);
    }

    @Override
    public void readFileNoFollow(String path, long maxBytes, OutputStream sink) throws IOException {
        files.readFile(path, maxBytes, sink, true);
    }

    @Override
    public Tree walk(String directory, TreeBounds bounds) throws IOException {
        return files.walk(directory, bounds);
    }

    @Override
    public void killAll() throws IOException {
        files.killAll();
    }

    @Override
    public FileInfo stat(String path) throws IOException {
        return files.stat(path);
    }

    @Override
    public List<FileInfo> list(String directory) throws IOException {
        return files.list(directory);
    }

    @Override
    public void mkdir(String path, boolean parents) throws IOException {
        files.mkdir(path, parents);
    }

    @Override
    public void remove(String path, boolean recursive) throws IOException {
        files.remove(path, recursive);
    }

    @Override
    public void rename(String from, String to) throws IOException {
        files.rename(from, to);
    }

    @Override
    public boolean isOpen() {
        return closed.get() == null;
    }

    @Override
    public void close() {
        shutDown(new IOException("the connection to the agent was closed"));
    }

    int newId() {
        return nextId.getAndIncrement();
    }

    /** Registers what waits for the answer, then sends the request. */
    void request(int id, PendingRequest request, ByteBuffer frame) throws IOException {
        register(id, request);
        try {
            send(frame);
        } catch (IOException e) {
            pending.remove(id);
            throw e;
        }
    }

    /** Gives the connection up, e.g. when the agent stopped answering. */
    void abort(IOException why) {
        shutDown(why);
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

    /** Waits for an answer to a request. An agent that does not answer is given up on. */
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
            throw forCaller(e.getCause());
        }
    }

    /**
     * A fresh exception for a failure that happened on another thread, so the caller's stack shows
     * where it waited; of the same type for the file errors callers tell apart.
     */
    static IOException forCaller(Throwable cause) {
        IOException fresh = switch (cause) {
            case FileOperationException e -> new FileOperationException(e.errno(), e.getMessage());
            case FileTooLargeException e -> new FileTooLargeException(e.getMessage());
            default -> new IOException(cause.getMessage());
        };
        fresh.initCause(cause);
        return fresh;
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
            case Frame.FORKED -> exactly(payload, 4, frame) && process(id, frame).onForked(payload.getInt());
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
                int errno = u32(payload, frame);
                String message = Printable.of(string(payload, frame), MAX_MESSAGE_CHARS);
                exactly(payload, 0, frame);
                yield switch (pending.remove(id)) {
                    case RemoteProcess process -> process.onStartFailed(message);
                    case FileRequest request -> request.onFailed(errno, message);
                    case null -> throw unknownId(id, frame);
                };
            }
            case Frame.DONE -> {
                exactly(payload, 0, frame);
                yield pending.remove(id) instanceof FileRequest request && request.onDone();
            }
            case Frame.DATA -> {
                if (payload.remaining() < 1 || payload.remaining() > Frame.MAX_DATA_CHUNK) {
                    throw new AgentProtocolException("DATA chunk of " + payload.remaining() + " bytes is outside 1.."
                            + Frame.MAX_DATA_CHUNK);
                }
                byte[] chunk = new byte[payload.remaining()];
                payload.get(chunk);
                yield fileRequest(id, frame).onData(chunk);
            }
            case Frame.FILEINFO -> {
                FileInfo info = fileInfo(payload, frame);
                FileRequest request = fileRequest(id, frame);
                if (request instanceof PendingStat) {
                    pending.remove(id);   // STAT is answered by this one frame
                }
                yield request.onFileInfo(info);
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

    private FileRequest fileRequest(int id, Frame frame) throws AgentProtocolException {
        return switch (pending.get(id)) {
            case FileRequest request -> request;
            case RemoteProcess ignored -> throw new AgentProtocolException("frame type " + frame.type()
                    + " for request " + Integer.toUnsignedString(id) + ", which is a process");
            case null -> throw unknownId(id, frame);
        };
    }

    /**
     * FILEINFO after its id: string name, u8 type, u64 size, u32 mode, i64 mtime ms, string link
     * target. The name is returned as the path; the request it answers makes the real path.
     */
    private static FileInfo fileInfo(ByteBuffer payload, Frame frame) throws AgentProtocolException {
        String name = boundedString(payload, frame);
        if (payload.remaining() < 1 + 8 + 4 + 8) {
            throw new AgentProtocolException("FILEINFO is too short");
        }
        int typeCode = payload.get();
        long size = payload.getLong();
        int mode = payload.getInt();
        long modified = payload.getLong();
        String link = boundedString(payload, frame);
        exactly(payload, 0, frame);
        FileType type = switch (typeCode) {
            case 0 -> FileType.FILE;
            case 1 -> FileType.DIRECTORY;
            case 2 -> FileType.SYMLINK;
            case 3 -> FileType.OTHER;
            default -> throw new AgentProtocolException("FILEINFO has the unknown file type " + typeCode);
        };
        if (size < 0 || (mode & ~07777) != 0) {
            throw new AgentProtocolException("FILEINFO has the size " + Long.toUnsignedString(size) + " or mode "
                    + Integer.toOctalString(mode) + ", which cannot be");
        }
        if (link.isEmpty() == (type == FileType.SYMLINK)) {
            throw new AgentProtocolException("FILEINFO of type " + type + " has a link target of " + link.length()
                    + " characters: symlinks, and only they, have a non-empty one");
        }
        return new FileInfo(name, type, size, mode, modified, type == FileType.SYMLINK ? link : null);
    }

    private static String boundedString(ByteBuffer payload, Frame frame) throws AgentProtocolException {
        if (payload.remaining() >= 4 && payload.getInt(payload.position()) > MAX_FILEINFO_STRING) {
            throw new AgentProtocolException("string in frame type " + frame.type() + " is over " + MAX_FILEINFO_STRING + " bytes");
        }
        return string(payload, frame);
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
}
