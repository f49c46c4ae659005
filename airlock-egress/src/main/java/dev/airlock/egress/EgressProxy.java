package dev.airlock.egress;

import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.RequestApproval;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.net.ssl.SSLContext;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The egress proxy of one sandbox. It listens on a unix socket (the sandbox reaches it through
 * its agent, or by connecting to the socket directly: the same policy applies either way) and
 * speaks three protocols, told apart by the first byte: SOCKS5 (0x05: no authentication, CONNECT
 * only), HTTP CONNECT (a tunnel) and HTTP/1.1 absolute-form forward requests ({@code GET
 * http://host/path}). Every destination goes through {@link EgressRules}; the proxy connects to
 * exactly the address the rules approved and never resolves a name itself. A forward request is
 * the only one of its connection: nothing pipelined behind it is read.
 *
 * <p>One virtual thread per connection (two while relaying). Header bytes, handshake time, idle
 * time, connections open at once and bytes over the sandbox's life are all bounded. {@link
 * #updatePolicy} applies to new connections at once and closes open ones the new policy denies.
 *
 * <p>Inspected destinations: a connection to a destination a credential is bound to, or that a
 * {@link RequestApproval} inspects, carries HTTP only, one request per connection, read here before
 * anything goes upstream. HTTPS (CONNECT or SOCKS5) is intercepted: the sandbox's TLS ends here with
 * a certificate of the sandbox's own CA, and the request goes on over a new TLS connection whose
 * certificate and name are verified, so a secret only ever leaves for the bound, verified host.
 * A request an approval covers waits for the {@link RequestGate} with nothing sent upstream (not
 * even a TCP connection is made) and is answered 403 unless approved; an approved request gets the
 * credentials like any other. Other tunnels stay opaque.
 *
 * <p>This class owns the socket, the sandbox's budget, the policy and the timeouts; what happens on
 * one connection is the {@link EgressPipeline}'s list of stages.
 */
public final class EgressProxy implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(EgressProxy.class);

    /**
     * Timeouts and bounds that are not part of the policy.
     *
     * @param upstreamTls     verifies the upstream servers of intercepted (credential-bound or
     *                        approval-inspected) HTTPS connections; null for the JVM's default trust
     * @param approvalTimeout the longest a request waits for its {@link RequestGate}; a backstop for a
     *                        gate that never answers (the gate applies its own, shorter timeout), after
     *                        which the connection is cut and the gate's thread interrupted
     */
    public record Options(Duration connectTimeout, Duration handshakeTimeout, Duration idleTimeout, int maxHeaderBytes,
                          SSLContext upstreamTls, Duration approvalTimeout) {
        public static final Duration DEFAULT_APPROVAL_TIMEOUT = Duration.ofHours(1);
        public static final Options DEFAULTS = new Options(Duration.ofSeconds(10), Duration.ofSeconds(30), Duration.ofMinutes(5), 32 * 1024);

        public Options {
            approvalTimeout = approvalTimeout == null ? DEFAULT_APPROVAL_TIMEOUT : approvalTimeout;
        }

        public Options(Duration connectTimeout, Duration handshakeTimeout, Duration idleTimeout, int maxHeaderBytes) {
            this(connectTimeout, handshakeTimeout, idleTimeout, maxHeaderBytes, null, null);
        }

        public Options(Duration connectTimeout, Duration handshakeTimeout, Duration idleTimeout, int maxHeaderBytes, SSLContext upstreamTls) {
            this(connectTimeout, handshakeTimeout, idleTimeout, maxHeaderBytes, upstreamTls, null);
        }

        public Options withUpstreamTls(SSLContext tls) {
            return new Options(connectTimeout, handshakeTimeout, idleTimeout, maxHeaderBytes, tls, approvalTimeout);
        }

        public Options withApprovalTimeout(Duration timeout) {
            return new Options(connectTimeout, handshakeTimeout, idleTimeout, maxHeaderBytes, upstreamTls, timeout);
        }
    }

    private final String sandboxId;
    private final Path socketPath;
    private final ServerSocketChannel server;
    private final EgressListener listener;
    private final Options options;
    /** Null when the sandbox has no credentials and no request approvals: then nothing is ever intercepted. */
    private final Interception interception;
    private final SandboxBudget budget = new SandboxBudget();
    private final EgressPipeline pipeline;
    private final Set<EgressConnection> live = ConcurrentHashMap.newKeySet();
    /** Connections accepted and not yet ended, in their handshake or past it. */
    private final AtomicInteger open = new AtomicInteger();
    private final Thread acceptor;
    private final Thread watchdog;
    private volatile EgressRules rules;
    private volatile boolean closed;

    private EgressProxy(String sandboxId, Path socketPath, ServerSocketChannel server, EgressRules rules, EgressListener listener, Options options,
                        Interception interception, RequestGate gate) {
        this.sandboxId = sandboxId;
        this.rules = rules;
        this.interception = interception;
        this.pipeline = new EgressPipeline(sandboxId, options, () -> this.rules, budget, interception, gate);
        this.socketPath = socketPath;
        this.server = server;
        this.listener = listener;
        this.options = options;
        this.acceptor = Thread.ofVirtual().name("egress-accept-" + sandboxId).unstarted(this::acceptLoop);
        this.watchdog = Thread.ofVirtual().name("egress-watchdog-" + sandboxId).unstarted(this::watchLoop);
    }

    /**
     * Binds {@code socketPath} (which must not exist) and starts serving. The caller sets the
     * socket file's owner and mode.
     */
    public static EgressProxy start(String sandboxId, Path socketPath, EgressRules rules, EgressListener listener, Options options) throws IOException {
        return start(sandboxId, socketPath, rules, listener, options, List.of());
    }

    /**
     * As {@link #start(String, Path, EgressRules, EgressListener, Options)}, injecting {@code
     * credentials} into requests to their destinations. With any credential, the proxy makes the
     * sandbox's certificate authority ({@link #certificateAuthorityPem()}); its key stays in this
     * object and is dropped by {@link #close()}.
     */
    public static EgressProxy start(String sandboxId, Path socketPath, EgressRules rules, EgressListener listener, Options options,
                                    List<Credential> credentials) throws IOException {
        return start(sandboxId, socketPath, rules, listener, options, credentials, List.of(), RequestGate.DENY_ALL);
    }

    /**
     * As {@link #start(String, Path, EgressRules, EgressListener, Options, List)}, also holding each
     * request one of {@code approvals} covers until {@code gate} approves it (null: {@link
     * RequestGate#DENY_ALL}). With any credential or approval, the proxy makes the sandbox's
     * certificate authority.
     */
    public static EgressProxy start(String sandboxId, Path socketPath, EgressRules rules, EgressListener listener, Options options,
                                    List<Credential> credentials, List<RequestApproval> approvals, RequestGate gate) throws IOException {
        Interception interception;
        try {
            interception = Interception.create(sandboxId, credentials, approvals, options.upstreamTls());
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot set up TLS interception (credentials, request approvals) for " + sandboxId + ": " + e.getMessage(), e);
        }
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            server.bind(UnixDomainSocketAddress.of(socketPath), 64);
        } catch (IOException e) {
            server.close();
            if (interception != null) {
                interception.close();
            }
            throw e;
        }
        EgressProxy proxy = new EgressProxy(sandboxId, socketPath, server, rules, listener, options, interception,
                gate == null ? RequestGate.DENY_ALL : gate);
        proxy.acceptor.start();
        proxy.watchdog.start();
        return proxy;
    }

    public Path socketPath() {
        return socketPath;
    }

    public NetworkPolicy policy() {
        return rules.policy();
    }

    /**
     * The public certificate (PEM) of the sandbox's certificate authority, which the sandbox must
     * trust for intercepted HTTPS; empty when the sandbox has neither credentials nor request approvals.
     */
    public Optional<String> certificateAuthorityPem() {
        return interception == null ? Optional.empty() : Optional.of(interception.certificateAuthority().certificatePem());
    }

    /** For tests: the sandbox's CA certificate, or null. */
    java.security.cert.X509Certificate certificateAuthority() {
        return interception == null ? null : interception.certificateAuthority().certificate();
    }

    /** For tests: the sandbox's CA itself, or null. */
    SandboxCertificateAuthority sandboxCa() {
        return interception == null ? null : interception.certificateAuthority();
    }

    /** Connections relaying or being set up now. */
    public int openConnections() {
        return live.size();
    }

    /** Bytes relayed both ways so far. */
    public long bytesUsed() {
        return budget.bytesUsed();
    }

    /**
     * Replaces the policy. New connections see it at once; open connections that it denies (by
     * name, port, or the address they are connected to) are closed now.
     */
    public void updatePolicy(NetworkPolicy policy) {
        EgressRules next = rules.withPolicy(policy);
        rules = next;
        for (EgressConnection c : live) {
            c.recheck(next);
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException e) {
            // closing anyway
        }
        acceptor.interrupt();
        watchdog.interrupt();
        for (EgressConnection c : live) {
            c.cut("proxy closed");
        }
        if (interception != null) {
            interception.close();
        }
        try {
            Files.deleteIfExists(socketPath);
        } catch (IOException e) {
            LOG.debug("cannot remove {}: {}", socketPath, e.getMessage());
        }
    }

    private void acceptLoop() {
        while (!closed) {
            SocketChannel client;
            try {
                client = server.accept();
            } catch (IOException e) {
                if (!closed) {
                    LOG.warn("egress proxy of {} stopped accepting: {}", sandboxId, e.getMessage());
                }
                return;
            }
            // Handshakes in progress are bounded too, not just relaying connections.
            int limit = Math.max(16, rules.policy().maxConnections() * 2);
            if (open.incrementAndGet() > limit) {
                open.decrementAndGet();
                EgressConnection.closeQuietly(client);
                continue;
            }
            EgressConnection c = new EgressConnection(new ClientChannel(client, options.maxHeaderBytes()), () -> rules, budget);
            live.add(c);
            Thread.ofVirtual().name("egress-" + sandboxId).start(() -> serve(c));
        }
    }

    private void watchLoop() {
        while (!closed) {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (EgressConnection c : live) {
                String why = c.overdue(now, options);
                if (why != null) {
                    c.cut(why);
                }
            }
        }
    }

    /** Runs one connection through the stages, then records it, whatever happened. */
    private void serve(EgressConnection c) {
        try {
            pipeline.run(c);
        } catch (IOException e) {
            LOG.debug("egress connection of {} ended: {}", sandboxId, e.getMessage());
        } finally {
            c.close();
            live.remove(c);
            open.decrementAndGet();
            try {
                listener.record(c.record.toRecord(sandboxId, c.cutBy()));
            } catch (RuntimeException e) {
                LOG.warn("egress listener failed: {}", e.getMessage());
            }
        }
    }
}
