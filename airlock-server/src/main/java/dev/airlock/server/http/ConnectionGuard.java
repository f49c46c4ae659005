package dev.airlock.server.http;

import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.internal.HttpConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Bounds what a client can hold by opening connections and sending slowly, before any token is
 * checked:
 * <ul>
 *   <li>at most {@link #MAX_CONNECTIONS} connections at once; more wait in the kernel's backlog,
 *       and while the server is at the limit an idle connection is closed after
 *       {@link #CROWDED_IDLE_TIMEOUT} instead of {@link #IDLE_TIMEOUT}, so idle sockets cannot
 *       lock others out;</li>
 *   <li>a request's head (request line and headers, at most 8 KiB, Jetty's default) must arrive
 *       whole within {@link #HEAD_DEADLINE} of its first byte, however it trickles: the idle timeout
 *       restarts with every byte, so without this a head sent one byte a second would hold its
 *       connection for over two hours. Bodies have their own deadline ({@code BodyReader}).</li>
 * </ul>
 * The head deadline is checked every {@link #SCAN_EVERY} over the connector's connections, so a
 * head may take up to one scan longer.
 */
public final class ConnectionGuard implements AutoCloseable {

    static final int MAX_CONNECTIONS = 512;
    /**
     * Longer than the JDK's HttpClient (the SDK's and the tests') keeps an idle connection for reuse, 30 s:
     * a server that closed it then would race the client's next request on it, which fails with no byte
     * of answer (the client retries only GET and HEAD by itself).
     */
    static final Duration IDLE_TIMEOUT = Duration.ofSeconds(60);
    static final Duration CROWDED_IDLE_TIMEOUT = Duration.ofSeconds(1);
    static final Duration HEAD_DEADLINE = Duration.ofSeconds(10);
    static final Duration SCAN_EVERY = Duration.ofSeconds(1);
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionGuard.class);

    private final ServerConnector connector;
    private final ScheduledExecutorService scanner;
    /** Connections waiting for a request head, as the last scan saw them. Touched by the scanner only. */
    private final Map<EndPoint, HeadWatch> heads = new HashMap<>();

    /** Requests and bytes read when first seen waiting, the last scan that saw no new byte, and whether bytes came since. */
    private record HeadWatch(long messagesIn, long bytesIn, long idleAt, boolean started) {
    }

    private ConnectionGuard(ServerConnector connector) {
        this.connector = connector;
        this.scanner = Executors.newSingleThreadScheduledExecutor(r -> Thread.ofPlatform().daemon().name("airlock-connection-guard").unstarted(r));
    }

    /** Applies the bounds to {@code connector} of {@code jetty}, before it starts; close the guard after the server stops. */
    public static ConnectionGuard apply(Server jetty, ServerConnector connector) {
        connector.setIdleTimeout(IDLE_TIMEOUT.toMillis());
        NetworkConnectionLimit limit = new NetworkConnectionLimit(MAX_CONNECTIONS, connector);
        limit.setEndPointIdleTimeout(CROWDED_IDLE_TIMEOUT.toMillis());
        jetty.addBean(limit);
        ConnectionGuard guard = new ConnectionGuard(connector);
        guard.scanner.scheduleWithFixedDelay(guard::closeSlowHeads, SCAN_EVERY.toMillis(), SCAN_EVERY.toMillis(), TimeUnit.MILLISECONDS);
        return guard;
    }

    /**
     * One scan. A connection waiting for a request's head (parser before the body) is watched: while
     * no byte arrives it is idle (the idle timeout's business); once bytes arrive without a whole
     * head, the head is under way since the last scan that saw it idle, and past the deadline the
     * connection is closed. Leading blank lines count as a head: the parser skips them.
     */
    private void closeSlowHeads() {
        try {
            long now = System.nanoTime();
            Map<EndPoint, HeadWatch> seen = new HashMap<>();
            for (EndPoint endPoint : connector.getConnectedEndPoints()) {
                if (!(endPoint.getConnection() instanceof HttpConnection http) || !http.getParser().inHeaderState()) {
                    continue; // reading a body or answering: the body deadline and the handlers bound those
                }
                HeadWatch before = heads.get(endPoint);
                HeadWatch watch = before == null || before.messagesIn() != http.getMessagesIn()
                        ? new HeadWatch(http.getMessagesIn(), http.getBytesIn(), now, false)
                        : before.started() || http.getBytesIn() != before.bytesIn()
                        ? new HeadWatch(before.messagesIn(), before.bytesIn(), before.idleAt(), true)
                        : new HeadWatch(before.messagesIn(), before.bytesIn(), now, false);
                if (watch.started() && now - watch.idleAt() > HEAD_DEADLINE.toNanos()) {
                    LOG.warn("closed a connection from {}: its request head took over {} s", endPoint.getRemoteSocketAddress(),
                            HEAD_DEADLINE.toSeconds());
                    endPoint.close();
                } else {
                    seen.put(endPoint, watch);
                }
            }
            heads.clear();
            heads.putAll(seen);
        } catch (RuntimeException e) {
            LOG.warn("the scan for slow request heads failed: {}", e.toString());
        }
    }

    @Override
    public void close() {
        scanner.shutdownNow();
    }
}
