package dev.airlock.agent;

import dev.airlock.core.PortConnection;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One port stream (docs/agent-protocol.md, "Port streams"): a TCP connection the agent made to
 * 127.0.0.1:port inside the sandbox, carried as PORT_DATA, PORT_EOF, PORT_RESET and PORT_CREDIT
 * frames on the agent's channel. Each direction has a window of {@link Frame#PORT_WINDOW} bytes:
 * the agent sends no more than the credit this side gave back as its reader consumed, so this side
 * holds at most one window of the sandbox's unread bytes, and a slow reader here stops only this
 * stream's sender inside; writes here wait for the agent's credit in the same way.
 *
 * <p>The reader thread of the {@link AgentClient} calls the {@code on…} methods and never waits in
 * them; callers' threads read and write. The stream stays registered with the router until the
 * agent answered PORT_OPEN and the stream ended (both directions passed EOF, or a RESET either way);
 * frames for it after that are ignored, as the protocol says.
 */
final class PortStream implements PortConnection, PendingRequest {

    /** How long the agent may take to make the connection before the attempt is given up. */
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);

    private final AgentClient agent;
    private final int id;
    private final int port;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();

    /** PORT_OPEN was answered (DONE or FAILED). */
    private boolean answered;
    /** The FAILED that answered PORT_OPEN: errno and message; null if none. */
    private String openErrno;
    private String openMessage;
    /** The caller gave up waiting for the answer (and sent RESET): the answer only ends the stream. */
    private boolean abandoned;

    /** From the sandbox, not yet read by the caller: at most one window in all. */
    private final Chunks received = new Chunks();
    private boolean inputEnded;

    /** Bytes this side may still send the sandbox. */
    private int credit = Frame.PORT_WINDOW;
    private boolean outputEnded;

    /** Why the stream broke (a RESET, or the agent's channel closed); null while it has not. */
    private IOException broken;
    private boolean closed;
    private boolean forgotten;

    private final InputStream input = new Input();
    private final OutputStream output = new Output();

    PortStream(AgentClient agent, int id, int port) {
        this.agent = agent;
        this.id = id;
        this.port = port;
    }

    int id() {
        return id;
    }

    /**
     * Waits for the agent's answer to PORT_OPEN. On a failure, a timeout or an interrupt the stream is
     * done with (after a timeout or an interrupt the agent is told with RESET) and the exception says why.
     */
    void awaitOpen(Duration timeout) throws IOException {
        lock.lock();
        try {
            long left = timeout.toNanos();
            while (!answered && broken == null) {
                if (left <= 0) {
                    abandon();
                    throw new PortConnection.RefusedException("ETIMEDOUT", "cannot connect to port " + port
                            + " in the sandbox: no connection within " + timeout.toSeconds() + " s (ETIMEDOUT);"
                            + " the server there may not be accepting connections");
                }
                try {
                    left = changed.awaitNanos(left);
                } catch (InterruptedException e) {
                    abandon();
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while connecting to port " + port + " in the sandbox");
                }
            }
            if (openErrno != null) {
                throw new PortConnection.RefusedException(openErrno, "cannot connect to port " + port + " in the sandbox: "
                        + openMessage + " (" + openErrno + ")");
            }
            if (!answered) {
                throw new IOException(broken.getMessage(), broken);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Gives up an unanswered PORT_OPEN; the agent answers it still (FAILED, ECANCELED), which ends it here. */
    private void abandon() {
        abandoned = true;
        closed = true;
        sendQuietly(Frame.PORT_RESET);
    }

    @Override
    public InputStream input() {
        return input;
    }

    @Override
    public OutputStream output() {
        return output;
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            if (broken == null && !(inputEnded && outputEnded)) {
                // The sandbox's side ended cleanly: end ours the same way; otherwise bytes would go unread.
                if (inputEnded) {
                    sendQuietly(Frame.PORT_EOF);
                    outputEnded = true;
                } else {
                    sendQuietly(Frame.PORT_RESET);
                }
            }
            forget();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ frames from the agent (reader thread)

    /** DONE: the connection is made. */
    boolean onOpened() {
        lock.lock();
        try {
            if (answered) {
                return false;
            }
            answered = true;
            if (abandoned) {
                forget();            // the RESET sent meanwhile ends it inside
            }
            changed.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** FAILED: no connection; the router has forgotten the stream already. */
    boolean onOpenFailed(int errno, String message) {
        lock.lock();
        try {
            if (answered) {
                return false;
            }
            answered = true;
            forgotten = true;
            openErrno = Errno.name(errno);
            openMessage = message;
            changed.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** PORT_DATA: bytes of the sandbox's server, within the credit given. */
    boolean onData(byte[] bytes) {
        lock.lock();
        try {
            if (!answered || openErrno != null || inputEnded || received.bytes() + bytes.length > Frame.PORT_WINDOW) {
                return false;
            }
            if (!closed) {
                received.add(bytes);
                changed.signalAll();
            }
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** PORT_EOF: the sandbox's server sends no more. */
    boolean onEof() {
        lock.lock();
        try {
            if (!answered || openErrno != null || inputEnded) {
                return false;
            }
            inputEnded = true;
            if (outputEnded) {
                forget();
            }
            changed.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** PORT_RESET: the connection inside is gone. */
    boolean onReset() {
        lock.lock();
        try {
            if (!answered || openErrno != null) {
                return false;
            }
            if (broken == null) {
                broken = new IOException("the connection to port " + port + " in the sandbox was reset");
            }
            forget();
            changed.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** PORT_CREDIT: the agent wrote that many of our bytes on to the server. */
    boolean onCredit(int bytes) {
        lock.lock();
        try {
            if (!answered || openErrno != null || bytes <= 0 || bytes > Frame.PORT_WINDOW - credit) {
                return false;
            }
            credit += bytes;
            changed.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void fail(IOException cause) {
        lock.lock();
        try {
            if (broken == null) {
                broken = new IOException("the connection to port " + port + " in the sandbox ended: " + cause.getMessage(), cause);
            }
            forgotten = true;        // the router forgets everything on its own
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ helpers (with the lock held)

    /** Takes the stream off the router once the agent answered; frames for it are ignored from then on. */
    private void forget() {
        if (!forgotten && answered) {
            forgotten = true;
            agent.forget(id, this);
        }
    }

    private void sendQuietly(int type) {
        try {
            agent.send(new FrameBuilder(type, "a port stream frame").u32(id).build());
        } catch (IOException e) {
            // The channel is gone: the agent ends the connection inside itself.
        }
    }

    private IOException failure() {
        if (broken != null) {
            return new IOException(broken.getMessage(), broken);
        }
        return new IOException("the connection to port " + port + " in the sandbox is closed");
    }

    private void await() throws InterruptedIOException {
        try {
            changed.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting on port " + port + " in the sandbox");
        }
    }

    /** The server's bytes; each chunk read through is credited back to the agent. */
    private final class Input extends InputStream {
        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            Objects.checkFromIndexSize(off, len, b.length);
            if (len == 0) {
                return 0;
            }
            lock.lock();
            try {
                while (true) {
                    if (closed) {
                        throw failure();
                    }
                    if (received.available() > 0) {
                        int n = received.take(b, off, len);
                        int consumed = received.consumedChunk();
                        if (consumed > 0 && !inputEnded && broken == null) {
                            agent.send(new FrameBuilder(Frame.PORT_CREDIT, "a port stream frame").u32(id).u32(consumed).build());
                        }
                        return n;
                    }
                    if (inputEnded) {
                        return -1;
                    }
                    if (broken != null) {
                        throw failure();
                    }
                    await();
                }
            } finally {
                lock.unlock();
            }
        }

        @Override
        public int available() {
            lock.lock();
            try {
                return received.available();
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void close() {
            PortStream.this.close();
        }
    }

    /** To the server: PORT_DATA within the agent's credit; close() is PORT_EOF (a half-close). */
    private final class Output extends OutputStream {
        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            Objects.checkFromIndexSize(off, len, b.length);
            while (len > 0) {
                lock.lock();
                try {
                    while (credit == 0 && broken == null && !closed && !outputEnded) {
                        await();
                    }
                    if (closed || broken != null) {
                        throw failure();
                    }
                    if (outputEnded) {
                        throw new IOException("the output to port " + port + " in the sandbox was closed already");
                    }
                    int n = Math.min(len, Math.min(credit, Frame.PORT_CHUNK));
                    agent.send(new FrameBuilder(Frame.PORT_DATA, "a port stream frame").u32(id).bytes(b, off, n).build());
                    credit -= n;
                    off += n;
                    len -= n;
                } finally {
                    lock.unlock();
                }
            }
        }

        @Override
        public void close() {
            lock.lock();
            try {
                if (outputEnded || closed || broken != null) {
                    return;
                }
                outputEnded = true;
                sendQuietly(Frame.PORT_EOF);
                if (inputEnded) {
                    forget();
                }
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    @Override
    public String toString() {
        return "port stream " + Integer.toUnsignedString(id) + " to port " + port;
    }
}
