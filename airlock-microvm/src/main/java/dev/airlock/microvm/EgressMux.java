package dev.airlock.microvm;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.EOFException;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The host end of a guest's egress bridge: the guest's agent multiplexes the TCP connections it
 * accepts on the guest's loopback over one virtio-serial port (its own, so egress bytes never
 * delay the agent's control frames), and this class opens one connection to the sandbox's egress
 * proxy socket per guest connection and copies bytes both ways. The proxy, its policy and its
 * records are the OCI driver's; only the transport differs. The frames are those of the agent's
 * {@code --egress-device} (docs/agent-protocol.md, "Egress bridge"): {@code u32 N, u8 type, u32 id,
 * payload} with types OPEN, DATA, EOF, RESET and CREDIT.
 *
 * <p>What the guest can make the host do is bounded, whatever runs in it:
 * <ul>
 * <li>at most {@value #MAX_CONNECTIONS} proxy connections at once (an OPEN beyond is answered by
 *     RESET), each with two virtual threads;
 * <li>at most {@value #WINDOW} bytes buffered per connection from the guest: DATA beyond the credit
 *     this side gave is a protocol violation that ends the bridge (every connection is closed);
 * <li>frames of at most {@value #MAX_CHUNK} bytes of data; ids never reused (an OPEN of an id not
 *     above every earlier one is a violation).
 * </ul>
 * The thread that reads the guest never waits for anything but the guest: what it receives goes
 * to per-connection queues that credits keep from filling, and every frame towards the guest is
 * written by a connection's own threads. So a guest that stops reading its port only stops its
 * own connections, and the agent, whose writes to the port block, is always read.
 */
final class EgressMux implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(EgressMux.class);

    static final int OPEN = 1;
    static final int DATA = 2;
    static final int EOF = 3;
    static final int RESET = 4;
    static final int CREDIT = 5;
    /** The bytes a sender may have in flight per direction of one connection, before credit comes back. */
    static final int WINDOW = 64 * 1024;
    /** The most data in one DATA frame. */
    static final int MAX_CHUNK = 16 * 1024;
    /** The most connections at once, as the agent's own bound. */
    static final int MAX_CONNECTIONS = 64;

    private final SocketChannel guest;
    private final Path proxySocket;
    private final String name;
    private final Map<Integer, Connection> live = new ConcurrentHashMap<>();
    private final Object writeLock = new Object();
    private final Thread reader;
    private volatile boolean closed;
    private long highestId;

    /**
     * Starts serving the guest's egress port {@code guest} (connected, blocking), with a connection to
     * {@code proxySocket} per guest connection.
     */
    EgressMux(SocketChannel guest, Path proxySocket, String name) {
        this.guest = guest;
        this.proxySocket = proxySocket;
        this.name = name;
        this.reader = Thread.ofPlatform().daemon().name("airlock-egress-" + name).start(this::readGuest);
    }

    private void readGuest() {
        ByteBuffer header = ByteBuffer.allocate(4);
        try {
            while (true) {
                readFully(header.clear());
                int length = header.flip().getInt();
                if (length < 5 || length > 5 + MAX_CHUNK) {
                    throw new IOException("an egress frame of " + length + " bytes");
                }
                ByteBuffer frame = ByteBuffer.allocate(length);
                readFully(frame);
                frame.flip();
                handle(frame.get() & 0xff, frame.getInt() & 0xffffffffL, frame);
            }
        } catch (IOException e) {
            if (!closed) {
                LOG.debug("egress bridge of {} ends: {}", name, e.toString());
            }
        } finally {
            close();
        }
    }

    private void readFully(ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (guest.read(buffer) < 0) {
                throw new EOFException("the guest's egress port closed");
            }
        }
    }

    /** One frame from the guest. Never blocks: see the class comment. */
    private void handle(int type, long id, ByteBuffer payload) throws IOException {
        Connection c = live.get((int) id);
        switch (type) {
            case OPEN -> {
                if (payload.hasRemaining() || id <= highestId) {
                    throw new IOException("a malformed OPEN of connection " + id);
                }
                highestId = id;
                if (closed) {
                    return;
                }
                if (live.size() >= MAX_CONNECTIONS) {
                    send(RESET, (int) id, null);      // a well-behaved agent never gets here: it has the same bound
                    return;
                }
                Connection opened = new Connection((int) id);
                live.put((int) id, opened);
                opened.start();
            }
            case DATA -> {
                int n = payload.remaining();
                if (n == 0 || n > MAX_CHUNK) {
                    throw new IOException("a DATA frame of " + n + " bytes");
                }
                if (c != null) {
                    c.fromGuest(payload);
                }
            }
            case EOF -> {
                if (payload.hasRemaining()) {
                    throw new IOException("an EOF frame with a payload");
                }
                if (c != null) {
                    c.fromGuestEnd();
                }
            }
            case RESET -> {
                if (payload.hasRemaining()) {
                    throw new IOException("a RESET frame with a payload");
                }
                if (c != null) {
                    c.close();
                }
            }
            case CREDIT -> {
                if (payload.remaining() != 4) {
                    throw new IOException("a CREDIT frame of " + payload.remaining() + " bytes");
                }
                if (c != null) {
                    c.credit(payload.getInt() & 0xffffffffL);
                }
            }
            default -> throw new IOException("an egress frame of unknown type " + type);
        }
    }

    /** Writes one frame to the guest, whole; blocks while the guest does not read (only the caller's connection waits). */
    private void send(int type, int id, ByteBuffer data) throws IOException {
        int n = data == null ? 0 : data.remaining();
        ByteBuffer frame = ByteBuffer.allocate(9 + n).putInt(5 + n).put((byte) type).putInt(id);
        if (data != null) {
            frame.put(data);
        }
        frame.flip();
        synchronized (writeLock) {
            while (frame.hasRemaining()) {
                guest.write(frame);
            }
        }
    }

    /** Closes the bridge: the guest's port and every proxy connection. Idempotent. */
    @Override
    public void close() {
        closed = true;
        live.values().forEach(Connection::close);
        live.clear();
        try {
            guest.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Proxy connections open now, for tests. */
    int liveConnections() {
        return live.size();
    }

    /**
     * One guest connection and its proxy connection. Bytes from the guest wait in {@link #toProxy}
     * (bounded by the window: the guest sends no more than its credit) for the writer thread, which
     * returns credit as it writes them; the reader thread sends the proxy's bytes as DATA, no more
     * than the guest's credit allows.
     */
    private final class Connection {
        /** A marker in {@link #toProxy}: the guest has no more bytes for this connection. */
        private static final ByteBuffer END = ByteBuffer.allocate(0);

        private final int id;
        /** Chunks from the guest: at most WINDOW bytes in all (the credit checks in {@link #fromGuest}), then the end. */
        private final BlockingQueue<ByteBuffer> toProxy = new LinkedBlockingQueue<>();
        /** Directions that ended cleanly (EOF passed on): at two the connection is done, with no RESET. */
        private final AtomicInteger ended = new AtomicInteger();
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition creditCame = lock.newCondition();
        private long guestBytesUnacked;      // from the guest, not yet credited back: at most WINDOW
        private long creditToGuest = WINDOW; // bytes this side may still send the guest
        private boolean guestEnded;
        private volatile boolean gone;
        private volatile SocketChannel proxy;

        Connection(int id) {
            this.id = id;
        }

        void start() {
            Thread.ofVirtual().name("airlock-egress-" + name + "-" + id + "-out").start(this::writeToProxy);
        }

        /** Connects to the proxy (in this connection's own thread), then copies the guest's bytes to it. */
        private void writeToProxy() {
            try {
                SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
                proxy = channel;
                if (gone) {
                    channel.close();
                    return;
                }
                channel.connect(UnixDomainSocketAddress.of(proxySocket));
                Thread.ofVirtual().name("airlock-egress-" + name + "-" + id + "-in").start(this::readFromProxy);
                while (true) {
                    ByteBuffer chunk = toProxy.take();
                    if (chunk == END) {
                        channel.shutdownOutput();
                        directionEnded();
                        return;
                    }
                    int n = chunk.remaining();
                    while (chunk.hasRemaining()) {
                        channel.write(chunk);
                    }
                    lock.lock();
                    try {
                        guestBytesUnacked -= n;
                    } finally {
                        lock.unlock();
                    }
                    send(CREDIT, id, ByteBuffer.allocate(4).putInt(0, n));
                }
            } catch (IOException | InterruptedException e) {
                reset();
            }
        }

        /** Copies the proxy's bytes to the guest as DATA within the guest's credit; its end becomes EOF. */
        private void readFromProxy() {
            ByteBuffer buffer = ByteBuffer.allocate(MAX_CHUNK);
            try {
                while (true) {
                    int allowed;
                    lock.lock();
                    try {
                        while (creditToGuest == 0 && !gone) {
                            creditCame.await();
                        }
                        if (gone) {
                            return;
                        }
                        allowed = (int) Math.min(creditToGuest, MAX_CHUNK);
                    } finally {
                        lock.unlock();
                    }
                    int n = proxy.read(buffer.clear().limit(allowed));
                    if (n < 0) {
                        send(EOF, id, null);
                        directionEnded();
                        return;
                    }
                    lock.lock();
                    try {
                        creditToGuest -= n;
                    } finally {
                        lock.unlock();
                    }
                    send(DATA, id, buffer.flip());
                }
            } catch (IOException | InterruptedException e) {
                reset();
            }
        }

        /** Bytes from the guest, within the credit it was given; beyond it the guest broke the protocol. */
        void fromGuest(ByteBuffer data) throws IOException {
            lock.lock();
            try {
                if (guestEnded || guestBytesUnacked + data.remaining() > WINDOW) {
                    throw new IOException("connection " + id + " got DATA beyond its credit, or after its EOF");
                }
                guestBytesUnacked += data.remaining();
            } finally {
                lock.unlock();
            }
            toProxy.add(data.slice());
        }

        void fromGuestEnd() throws IOException {
            lock.lock();
            try {
                if (guestEnded) {
                    throw new IOException("connection " + id + " got a second EOF");
                }
                guestEnded = true;
            } finally {
                lock.unlock();
            }
            toProxy.add(END);
        }

        void credit(long bytes) throws IOException {
            lock.lock();
            try {
                if (bytes == 0 || creditToGuest + bytes > WINDOW) {
                    throw new IOException("connection " + id + " got CREDIT beyond its window");
                }
                creditToGuest += bytes;
                creditCame.signalAll();
            } finally {
                lock.unlock();
            }
        }

        /** Both directions passed their end on: the agent closes its side too, so nothing is sent. */
        private void directionEnded() {
            if (ended.incrementAndGet() == 2) {
                close();
            }
        }

        /** The proxy's side failed: the guest hears RESET, and the connection is gone. */
        private void reset() {
            if (!gone) {
                try {
                    send(RESET, id, null);
                } catch (IOException ignored) {
                    // the bridge itself is ending
                }
                close();
            }
        }

        /** Closes the proxy connection and stops both threads (the writer at END, the reader at its closed channel or its signal). */
        void close() {
            gone = true;
            toProxy.offer(END);                  // wakes the writer, should it wait for bytes
            live.remove(id, this);
            lock.lock();
            try {
                creditCame.signalAll();
            } finally {
                lock.unlock();
            }
            SocketChannel channel = proxy;
            if (channel != null) {
                try {
                    channel.close();
                } catch (IOException ignored) {
                    // closed anyway
                }
            }
            // Never an interrupt: a thread interrupted while it writes to the guest's port would close the port
            // (an interruptible channel), and with it every connection and the agent. The END marker, the signal
            // and the closed proxy channel wake both threads; one writing to the port waits on the guest alone.
        }
    }
}
