package dev.airlock.server.http;

import jakarta.servlet.http.HttpServletRequest;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Notices that the client of a request still being handled went away, although the handler
 * neither reads nor writes meanwhile (a plain exec waits for its process). Jetty notices only when
 * the response is written, so a watched connection is also registered with a selector of its own
 * for readability: a closed or reset connection becomes readable at once. A readable connection is
 * then asked of the kernel ({@link TcpPeerState}), never read, so a byte the client pipelined
 * stays Jetty's; one that is still open is watched no further. One thread serves every watch.
 */
public final class ClientDisconnects implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ClientDisconnects.class);

    /** One watched request: closing it ends the watch. */
    public interface Watch extends AutoCloseable {
        /** Whether the client went away while watched. */
        boolean disconnected();

        @Override
        void close();
    }

    private final Selector selector;
    private final Thread thread;
    private final Queue<Registration> pending = new ConcurrentLinkedQueue<>();
    private volatile boolean closed;

    public ClientDisconnects() {
        try {
            selector = Selector.open();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException("cannot open a selector to watch for disconnecting clients", e);
        }
        thread = Thread.ofPlatform().daemon().name("airlock-client-disconnects").start(this::loop);
    }

    /**
     * Watches the connection of {@code req} until the watch is closed; if its client goes away
     * first, {@code onDisconnect} runs (on this class's thread: it must be quick, such as an
     * interrupt). A request that is not on a plain socket is not watched.
     */
    public Watch watch(HttpServletRequest req, Runnable onDisconnect) {
        Registration r = new Registration(onDisconnect);
        ServletContextRequest core = ServletContextRequest.getServletContextRequest(req);
        if (closed || core == null || !(core.getConnectionMetaData().getConnection().getEndPoint().getTransport() instanceof SocketChannel channel)) {
            return r;
        }
        r.channel = channel;
        pending.add(r);
        selector.wakeup();
        return r;
    }

    private void loop() {
        while (!closed) {
            try {
                selector.select(1000);
            } catch (IOException | java.nio.channels.ClosedSelectorException e) {
                return;
            }
            for (Registration r; (r = pending.poll()) != null; ) {
                r.register();
            }
            for (SelectionKey key : selector.selectedKeys()) {
                ((Registration) key.attachment()).readable();
            }
            selector.selectedKeys().clear();
        }
    }

    @Override
    public void close() {
        closed = true;
        selector.wakeup();
        try {
            thread.join(2000);
            selector.close();
        } catch (IOException e) {
            LOG.debug("closing the disconnect selector: {}", e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private final class Registration implements Watch {

        private final Runnable onDisconnect;
        private SocketChannel channel;
        private SelectionKey key;
        private boolean ended;
        private volatile boolean disconnected;

        Registration(Runnable onDisconnect) {
            this.onDisconnect = onDisconnect;
        }

        /** On the selector's thread. */
        synchronized void register() {
            if (ended) {
                return;
            }
            try {
                key = channel.register(selector, SelectionKey.OP_READ, this);
            } catch (IOException | RuntimeException e) {
                // closed already, or not registrable: nothing to watch
                ended = true;
            }
        }

        /** On the selector's thread: the client sent something, closed, or reset. */
        void readable() {
            synchronized (this) {
                if (ended) {
                    return;
                }
                ended = true;
                key.cancel();
                try {
                    disconnected = !channel.isOpen() || TcpPeerState.peerClosed((InetSocketAddress) channel.getLocalAddress(),
                            (InetSocketAddress) channel.getRemoteAddress());
                } catch (IOException e) {
                    disconnected = true;
                }
            }
            if (disconnected) {
                onDisconnect.run();
            }
        }

        @Override
        public boolean disconnected() {
            return disconnected;
        }

        @Override
        public synchronized void close() {
            if (ended) {
                return;
            }
            ended = true;
            if (key != null) {
                key.cancel();
                // the selector lets go of a cancelled key on its next select: wake it, so Jetty's close of the socket is not held up
                selector.wakeup();
            }
        }
    }
}
