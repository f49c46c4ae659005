package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.PortConnection;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.Trace;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The host side of the agent protocol (docs/agent-protocol.md) over one connected unix socket.
 *
 * <p>One virtual thread reads every frame and hands it to the request it answers (through
 * {@link FrameRouter}, which decodes it with a {@link PayloadReader}); another writes the frames
 * callers queue, in order. File requests are made by {@link AgentFiles}, executions are
 * {@link RemoteProcess}es. Everything the agent sends is hostile input: a frame that is too long,
 * of an unknown type, for an unknown id, or of the wrong shape closes the connection and fails
 * every pending request with an {@link IOException}.
 */
public final class AgentClient implements SandboxAgent {

    /** 8: DETACH over a device (a microVM guest's port): the agent keeps the port and waits on it for RESUME. 7: SPARE (a supervisor forked ahead, named in FORKED, for the host to place) and EXEC_SPARE (an execution handed to it). 6: port streams (PORT_OPEN, PORT_DATA, PORT_EOF, PORT_RESET, PORT_CREDIT). 5: EXEC and EXEC_HELD may end with a terminal size (the command runs on a pseudo-terminal); RESIZE; DETACH (let go of the channel before a checkpoint, connect again where told). 4: every execution runs under a supervisor of its own; FORKED names the supervisor, STARTED the command, and SIGNAL 9 kills the whole tree. 3: EXEC_HELD, FORKED and RELEASE (an execution placed by the host before it execs); READ_FILE carries flags; WALK and KILL_ALL. 2: FAILED carries an errno; WRITE_FILE carries flags; file requests 20-25. */
    static final int PROTOCOL_VERSION = 8;
    /** How long the agent may take to answer a request (or send the next chunk of a file) before the connection is given up. */
    static final Duration REPLY_TIMEOUT = Duration.ofMinutes(2);
    /** Agent text ends up in logs and in answers to users: keep it this short (and printable). */
    static final int MAX_MESSAGE_CHARS = 200;

    /**
     * The threads that read and write each agent's connection: virtual, so that thousands of
     * sandboxes cost no platform thread each; platform with the system property {@value
     * #PLATFORM_THREADS_PROPERTY}=true, which bin/airlock sets for its short commands. A virtual
     * thread that blocks on a socket starts the JDK's poller thread, which then waits in native code
     * for good, and HotSpot lets a System.exit wait up to 300 ms for threads in native code to
     * settle: a third of a second on every one-shot {@code airlock run}.
     */
    public static final String PLATFORM_THREADS_PROPERTY = "airlock.agent.platformThreads";
    private static final boolean PLATFORM_THREADS = Boolean.getBoolean(PLATFORM_THREADS_PROPERTY);

    private final SocketChannel channel;
    private final LinkedBlockingQueue<ByteBuffer> outbox = new LinkedBlockingQueue<>();
    private volatile Thread writer;
    private volatile Thread reader;
    /** The id of a device DETACH under way: the reader stops once its DONE is in, leaving the channel open. */
    private volatile int detaching;
    /** What the writer takes to end without closing the channel ({@link #detachDevice}). */
    private static final ByteBuffer LET_GO = ByteBuffer.allocate(0);
    private final FrameRouter router = new FrameRouter();
    private final AtomicInteger nextId = new AtomicInteger(1);
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
        client.reader = client.thread("airlock-agent-reader", client::readLoop);
        client.writer = client.thread("airlock-agent-writer", client::writeLoop);
        try {
            client.await(client.router.hello(), helloTimeout, "HELLO");
        } catch (IOException | InterruptedException e) {
            client.close();
            throw e;
        }
        return client;
    }

    /** Starts one of the connection's two threads ({@link #PLATFORM_THREADS_PROPERTY}). */
    private Thread thread(String name, Runnable task) {
        return (PLATFORM_THREADS ? Thread.ofPlatform().daemon(true) : Thread.ofVirtual()).name(name).start(task);
    }

    @Override
    public AgentProcess start(ExecRequest request, OutputListener listener) throws IOException {
        return start(request, listener, null);
    }

    /**
     * Starts {@code request} like {@link #start(ExecRequest, OutputListener)}, but the agent holds
     * the forked supervisor until {@code placement} has put it in place; only then may it fork the
     * command. A placement that throws ends the process unstarted and its exception is rethrown.
     * Costs one more round trip to the agent than a plain start.
     *
     * @param placement null for a plain start
     */
    public AgentProcess start(ExecRequest request, OutputListener listener, ExecPlacement placement) throws IOException {
        return start(request, listener, placement, 0, null);
    }

    /**
     * Starts {@code request} in the spare supervisor {@code spare} (from {@link #spare()}), which
     * the caller has placed already: no round trip waits for a placement. The agent forks the next
     * spare first and names it to {@code nextSpare} (on the reader thread: it must not block).
     * Were the spare gone (the sandbox's code may kill it), the agent holds a new supervisor
     * instead, which {@code placement} places, as for a held start.
     */
    public AgentProcess startInSpare(ExecRequest request, OutputListener listener, ExecPlacement placement, int spare,
                                     IntConsumer nextSpare) throws IOException {
        if (spare <= 0 || placement == null || nextSpare == null) {
            throw new IllegalArgumentException("a start in a spare needs the spare's pid, a placement for the fallback and a"
                    + " taker of the next spare");
        }
        return start(request, listener, placement, spare, nextSpare);
    }

    /**
     * Has the agent fork a spare supervisor and returns its pid in the sandbox, for the caller to
     * place and then name in {@link #startInSpare}. One waits at a time.
     */
    public int spare() throws IOException, InterruptedException {
        int id = nextId.getAndIncrement();
        PendingSpare spare = new PendingSpare();
        request(id, spare, new FrameBuilder(Frame.SPARE, "spare").u32(id).build());
        return awaitReply(spare.pid(), "SPARE");
    }

    private AgentProcess start(ExecRequest request, OutputListener listener, ExecPlacement placement, int spare, IntConsumer nextSpare)
            throws IOException {
        int id = nextId.getAndIncrement();
        // Sorted, so that the same request always gives the same environment order.
        var env = new TreeMap<>(request.env()).entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList();
        int type = spare > 0 ? Frame.EXEC_SPARE : placement == null ? Frame.EXEC : Frame.EXEC_HELD;
        FrameBuilder builder = new FrameBuilder(type, "the command with its environment").u32(id);
        if (spare > 0) {
            builder.u32(spare);
        }
        builder.strings(request.argv()).strings(env).string(request.cwd());
        if (request.tty() != null) {
            builder.u32(request.tty().rows()).u32(request.tty().cols());
        }
        ByteBuffer frame = builder.build();
        RemoteProcess process = new RemoteProcess(this, id, listener, placement, spare, nextSpare, request.tty() != null);
        register(id, process);
        Trace.mark("exec: sent");
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

    /**
     * Asks the agent to let go of this connection (DETACH) so its sandbox can be checkpointed, then
     * closes it. The agent keeps every process and connects again to the socket {@code socketName}
     * (lower-case letters, digits, {@code - . _}; at most 64) in the directory of its first socket,
     * where the host listens once the checkpoint is taken (or restored): {@link #connect} wraps that
     * connection. The name should be random: code inside cannot list that directory, so it cannot
     * race the agent to the new channel. Refused by the agent (an {@code IOException} naming EBUSY)
     * while an execution or a file read runs; this connection stays usable then.
     */
    public void detach(String socketName) throws IOException {
        if (socketName == null || !socketName.matches("[a-z0-9][a-z0-9._-]{0,63}")) {
            throw new IllegalArgumentException("a socket name is 1 to 64 of a-z 0-9 . _ - (not starting with a dot): " + socketName);
        }
        files.detach(socketName);
        close();
    }

    /**
     * Asks the agent on a device channel (a microVM guest's virtio-serial port) to let go of the host
     * (DETACH, as {@link #detach} does for a socket): it closes its egress bridges and port streams,
     * answers, and then reads nothing on its port but RESUME, so the guest can be saved meanwhile.
     * This client ends; its channel stays open and is returned, for {@link #resume} on it (or on a
     * guest restored from what was saved, through that guest's own channel). Refused by the agent (an
     * {@code IOException} naming EBUSY) while an execution or a file read runs; this client stays usable then.
     */
    public SocketChannel detachDevice() throws IOException, InterruptedException {
        int id = newId();
        detaching = id;
        try {
            files.detachDevice(id);
        } catch (IOException e) {
            detaching = 0;
            throw e;
        }
        reader.join(REPLY_TIMEOUT.toMillis());
        if (reader.isAlive()) {
            abort(new IOException("the agent's reader did not stop after DETACH"));
            throw new IOException("the agent's reader did not stop after DETACH");
        }
        if (closed.compareAndSet(null, new IOException("the agent was detached"))) {
            outbox.add(LET_GO);
            router.failAll(new IOException("the agent was detached"));
        }
        writer.join(REPLY_TIMEOUT.toMillis());
        return channel;
    }

    /**
     * Says RESUME to an agent that let go of its device channel ({@link #detachDevice}) and waits for
     * its HELLO, as {@link #connect} does: a client for the same agent, or for a guest restored from
     * one saved while its agent waited.
     */
    public static AgentClient resume(SocketChannel channel, Duration helloTimeout) throws IOException, InterruptedException {
        channel.configureBlocking(true);
        ByteBuffer frame = new FrameBuilder(Frame.RESUME, "resume").build();
        while (frame.hasRemaining()) {
            channel.write(frame);
        }
        return connect(channel, helloTimeout);
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
    public CompletableFuture<Void> mkdirWithoutWaiting(String path, boolean parents) {
        try {
            return files.mkdirWithoutWaiting(path, parents);
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public void remove(String path, boolean recursive) throws IOException {
        files.remove(path, recursive);
    }

    @Override
    public void rename(String from, String to) throws IOException {
        files.rename(from, to);
    }

    /**
     * Opens a port stream (PORT_OPEN, docs/agent-protocol.md "Port streams") and waits up to
     * {@link PortStream#CONNECT_TIMEOUT} for the agent to make the connection inside.
     */
    @Override
    public PortConnection connect(int port) throws IOException {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port " + port + " is outside 1..65535");
        }
        int id = newId();
        PortStream stream = new PortStream(this, id, port);
        request(id, stream, new FrameBuilder(Frame.PORT_OPEN, "the port connection").u32(id).u32(port).build());
        stream.awaitOpen(PortStream.CONNECT_TIMEOUT);
        return stream;
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
            router.remove(id);
            throw e;
        }
    }

    /** Stops routing frames for {@code id} to {@code request}: frames for it are ignored or refused from then on. */
    void forget(int id, PendingRequest request) {
        router.remove(id, request);
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
                if (frame == LET_GO) {
                    return;
                }
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
            case PortConnection.RefusedException e -> new PortConnection.RefusedException(e.errno(), e.getMessage());
            default -> new IOException(cause.getMessage());
        };
        fresh.initCause(cause);
        return fresh;
    }

    private void register(int id, PendingRequest request) throws IOException {
        router.put(id, request);
        // close() may have run between the caller's check and the put: fail the request then.
        IOException why = closed.get();
        if (why != null) {
            router.remove(id);
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
        router.failAll(why);
    }

    private void readLoop() {
        try {
            while (true) {
                Frame frame = Frame.read(channel);
                int id = frame.type() == Frame.DONE && frame.payload().remaining() >= 4 ? frame.payload().getInt(frame.payload().position()) : 0;
                router.dispatch(frame);
                if (id != 0 && id == detaching) {
                    return;                // the agent reads nothing but RESUME now: the channel is the detacher's
                }
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
}
