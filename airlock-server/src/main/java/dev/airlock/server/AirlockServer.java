package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.cluster.NodeTls;
import dev.airlock.server.console.ConsoleServlet;
import dev.airlock.server.command.NodeRouting;
import dev.airlock.server.e2b.E2bDoor;
import dev.airlock.server.http.ApiTls;
import dev.airlock.server.http.ConnectionGuard;
import dev.airlock.server.http.ConsoleSessions;
import dev.airlock.server.http.JsonErrorHandler;
import dev.airlock.server.http.SecurityHeaders;
import dev.airlock.server.http.UnreadBodies;
import dev.airlock.server.mcp.McpHttpEndpoint;
import dev.airlock.server.rest.ApiServlet;
import dev.airlock.server.sandbox.SandboxService;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.ee10.websocket.server.config.JettyWebSocketServletContainerInitializer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.ContextHandlerCollection;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.util.List;
import java.util.concurrent.Executors;

/**
 * {@code airlock serve}: the engine behind an HTTP server. Requests run on virtual threads, so a
 * long execution holds no platform thread. Closing it destroys every sandbox it holds.
 */
public final class AirlockServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(AirlockServer.class);

    private final Server jetty;
    private final SandboxRuntime runtime;
    private final McpHttpEndpoint mcp;
    private final URI uri;
    private final URI e2bUri;
    private final List<ConnectionGuard> guards;
    private boolean closed;

    private AirlockServer(Server jetty, SandboxRuntime runtime, McpHttpEndpoint mcp, List<ConnectionGuard> guards, URI uri, URI e2bUri) {
        this.e2bUri = e2bUri;
        this.jetty = jetty;
        this.guards = guards;
        this.runtime = runtime;
        this.mcp = mcp;
        this.uri = uri;
    }

    public static AirlockServer start(ServerConfig config) {
        // files that cannot serve HTTPS stop the start before anything else is made
        ApiTls apiTls = config.tls() == null ? null : ApiTls.load(config.tls().cert(), config.tls().key());
        SandboxRuntime runtime = SandboxRuntime.open(config);
        McpHttpEndpoint mcp = null;
        List<ConnectionGuard> guards = new java.util.ArrayList<>();
        try {
            SandboxService service = runtime.service();
            QueuedThreadPool threads = new QueuedThreadPool();
            threads.setName("airlock-http");
            threads.setVirtualThreadsExecutor(Executors.newVirtualThreadPerTaskExecutor());
            Server jetty = new Server(threads);
            ServerConnector connector = apiTls == null ? new ServerConnector(jetty) : tlsConnector(jetty, apiTls.serverContext());
            connector.setHost(config.host());
            connector.setPort(config.port());
            jetty.addConnector(connector);
            connector.setName("api");
            guards.add(ConnectionGuard.apply(jetty, connector));
            ServletContextHandler context = new ServletContextHandler();
            context.setContextPath("/");
            // the web console (its pages at / and /console/*; its data through the REST API with a session cookie)
            ConsoleSessions sessions = new ConsoleSessions(java.time.Clock.systemUTC());
            context.addServlet(new ServletHolder("api", new ApiServlet(service, config, openApi(), sessions, false)), "/*");
            ServletHolder console = new ServletHolder("console", new ConsoleServlet(service, sessions, config.host()));
            context.getServletHandler().addServletWithMapping(console, "");
            context.getServletHandler().addServletWithMapping(console, "/console/*");
            context.getServletHandler().addServletWithMapping(console, ConsoleServlet.FAVICON);
            context.addFilter(new org.eclipse.jetty.ee10.servlet.FilterHolder(new UnreadBodies()), "/*", java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
            context.addFilter(new org.eclipse.jetty.ee10.servlet.FilterHolder(new SecurityHeaders()), "/*", java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
            if (apiTls != null) {
                // the certificate's names are this server's own, for the Host and Origin checks
                context.addFilter(new org.eclipse.jetty.ee10.servlet.FilterHolder(apiTls.namesFilter()), "/*",
                        java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
            }
            // The second interface over the same service: MCP (Streamable HTTP) at /mcp, behind the same token.
            mcp = McpHttpEndpoint.mount(context, service, config, config.authHint());
            // WebSocket upgrades (a terminal's attach endpoint), done by the API servlet after its checks
            JettyWebSocketServletContainerInitializer.configure(context, null);
            context.setErrorHandler(new JsonErrorHandler());
            jetty.setErrorHandler(new JsonErrorHandler());
            context.setVirtualHosts(List.of("@api"));
            E2bDoor door = config.e2bBindPort() < 0 ? null : new E2bDoor(service, config.maxTtl());
            E2bListener e2b = door == null ? null : e2bDoor(jetty, config, door);
            if (e2b != null) {
                guards.add(e2b.guard());
            }
            NodeTls tls = config.cluster() == null ? null : NodeTls.create(config.cluster().nodeName());
            PeerListener peer = tls == null ? null : peerPort(jetty, config, service, tls, sessions, mcp, door);
            if (peer != null) {
                guards.add(peer.guard());
            }
            ContextHandlerCollection handlers = new ContextHandlerCollection(context);
            if (e2b != null) {
                handlers.addHandler(e2b.context());
            }
            if (peer != null) {
                handlers.addHandler(peer.context());
            }
            jetty.setHandler(handlers);
            jetty.setStopAtShutdown(false);
            jetty.start();
            URI uri = URI.create((apiTls == null ? "http" : "https") + "://" + hostForUri(config.host()) + ":" + connector.getLocalPort());
            runtime.listeningOn(uri, peer == null ? null : hostForUri(config.host()) + ":" + peer.connector().getLocalPort(),
                    tls == null ? null : tls.fingerprint());
            URI e2bUri = e2b == null ? null : URI.create("http://" + hostForUri(config.host()) + ":" + e2b.connector().getLocalPort());
            return new AirlockServer(jetty, runtime, mcp, guards, uri, e2bUri);
        } catch (Exception e) {
            if (mcp != null) {
                mcp.close();
            }
            guards.forEach(ConnectionGuard::close);
            runtime.close();
            if (e instanceof AirlockException ae) {
                throw ae;
            }
            String e2bPort = config.e2bBindPort() > 0 ? ":" + config.e2bBindPort() : null;
            String peerPort = config.cluster() != null && config.cluster().peerPort() > 0 ? ":" + config.cluster().peerPort() : null;
            String hint = e2bPort != null && String.valueOf(e.getMessage()).contains(e2bPort)
                    ? " (that is the E2B door's port: give it another with --e2b-port, or 0 for none)"
                    : peerPort != null && String.valueOf(e.getMessage()).contains(peerPort)
                    ? " (that is the cluster's peer port: give it another with --cluster-port)" : "";
            throw AirlockException.unavailable("cannot start the server on " + config.host() + ":" + config.port() + ": " + e.getMessage() + hint);
        }
    }


    /** The E2B door's port, its bounds, and what it serves. */
    private record E2bListener(ServerConnector connector, ConnectionGuard guard, ServletContextHandler context) {
    }

    /**
     * The E2B door's connector and context (docs/e2b.md): at the root of a port of its own, since
     * the SDKs build their URLs from the root; the same connection bounds as the API's port.
     */
    private static E2bListener e2bDoor(Server jetty, ServerConfig config, E2bDoor door) throws IOException {
        ServerConnector connector = new ServerConnector(jetty);
        connector.setName("e2b");
        connector.setHost(config.host());
        connector.setPort(config.e2bBindPort());
        jetty.addConnector(connector);
        ConnectionGuard guard = ConnectionGuard.apply(jetty, connector);
        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        context.setVirtualHosts(List.of("@e2b"));
        context.addServlet(e2bServlet(config, door), "/*");
        context.addFilter(new org.eclipse.jetty.ee10.servlet.FilterHolder(new UnreadBodies()), "/*", java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
        context.setErrorHandler(new JsonErrorHandler());
        return new E2bListener(connector, guard, context);
    }

    /** The E2B door's servlet: uploads (POST /files) are multipart, parts over 1 MiB wait on disk, in the data directory, until the request ends. */
    private static ServletHolder e2bServlet(ServerConfig config, E2bDoor door) throws IOException {
        java.nio.file.Path uploads = config.dataDir().resolve("e2b-uploads");
        java.nio.file.Files.createDirectories(uploads);
        ServletHolder holder = new ServletHolder("e2b", door);
        holder.getRegistration().setMultipartConfig(new jakarta.servlet.MultipartConfigElement(uploads.toString(),
                E2bDoor.MAX_UPLOAD, E2bDoor.MAX_UPLOAD, 1 << 20));
        return holder;
    }

    /** A node's peer port, its bounds, and what it serves. */
    private record PeerListener(ServerConnector connector, ConnectionGuard guard, ServletContextHandler context) {
    }

    /**
     * A node of a cluster's peer port (docs/cluster.md, "Between nodes"): TLS only, with the key and
     * certificate the node made at start; the REST API, for the calls other nodes forward, each signed
     * with the cluster's secret, the MCP tool calls another node's MCP door sends on, and the requests
     * another node's E2B door sends on (under {@link NodeRouting#E2B_DOOR}, when this node's door is on).
     * No console, no MCP endpoint, and no client's token or key here.
     */
    private static PeerListener peerPort(Server jetty, ServerConfig config, SandboxService service, NodeTls tls, ConsoleSessions sessions,
                                         McpHttpEndpoint mcp, E2bDoor door) throws IOException {
        ServerConnector connector = tlsConnector(jetty, tls.serverContext());
        connector.setName("peer");
        connector.setHost(config.host());
        connector.setPort(config.cluster().peerPort());
        jetty.addConnector(connector);
        ConnectionGuard guard = ConnectionGuard.apply(jetty, connector);
        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        context.setVirtualHosts(List.of("@peer"));
        context.addServlet(new ServletHolder("peer", new ApiServlet(service, config, openApi(), sessions, true, mcp)), "/*");
        if (door != null) {
            context.addServlet(e2bServlet(config, door), NodeRouting.E2B_DOOR + "/*");
        }
        JettyWebSocketServletContainerInitializer.configure(context, null);   // a terminal another node relays
        context.addFilter(new org.eclipse.jetty.ee10.servlet.FilterHolder(new UnreadBodies()), "/*", java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
        context.setErrorHandler(new JsonErrorHandler());
        return new PeerListener(connector, guard, context);
    }

    /**
     * A connector that speaks HTTPS only, with {@code tls}. No SNI check: peers pin the certificate and
     * reach a node by address, and the Host a browser sends is {@link dev.airlock.server.http.LocalOrigin}'s to check.
     */
    private static ServerConnector tlsConnector(Server jetty, org.eclipse.jetty.util.ssl.SslContextFactory.Server tls) {
        org.eclipse.jetty.server.HttpConfiguration https = new org.eclipse.jetty.server.HttpConfiguration();
        org.eclipse.jetty.server.SecureRequestCustomizer secure = new org.eclipse.jetty.server.SecureRequestCustomizer();
        secure.setSniHostCheck(false);
        https.addCustomizer(secure);
        return new ServerConnector(jetty, new org.eclipse.jetty.server.SslConnectionFactory(tls, "http/1.1"),
                new org.eclipse.jetty.server.HttpConnectionFactory(https));
    }

    private static String hostForUri(String host) {
        return host.contains(":") ? "[" + host + "]" : host;
    }

    private static byte[] openApi() throws IOException {
        try (InputStream in = AirlockServer.class.getResourceAsStream("openapi.json")) {
            if (in == null) {
                throw new IOException("openapi.json is missing from the class path");
            }
            return in.readAllBytes();
        }
    }

    public URI uri() {
        return uri;
    }

    /** Where the E2B door listens (E2B_API_URL and E2B_SANDBOX_URL of the SDKs), or null when it is off. */
    public URI e2bUri() {
        return e2bUri;
    }

    /** The built-in {@code local} client's token ({@code <data>/token}). */
    public String token() {
        return runtime.localToken();
    }

    /** What the start reaped of earlier, crashed servers: one line each. */
    public List<String> reapedAtStart() {
        return runtime.service().reapedAtStart();
    }

    /** The MCP endpoint's state sizes (sessions, ended ids, tracked calls): what the hostile tests watch. */
    public McpHttpEndpoint.StateSizes mcpState() {
        return mcp.stateSizes();
    }

    /** The audit log of this server (tests flush it before reading the database). */
    public dev.airlock.server.audit.AuditLog audit() {
        return runtime.audit();
    }

    public void join() throws InterruptedException {
        jetty.join();
    }

    /** Stops accepting requests, destroys every sandbox, and releases the engine and store. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            jetty.stop();
        } catch (Exception e) {
            LOG.warn("HTTP server did not stop cleanly: {}", e.getMessage());
        }
        guards.forEach(ConnectionGuard::close);
        mcp.close();
        runtime.close();
    }
}
