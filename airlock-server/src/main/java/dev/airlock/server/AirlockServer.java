package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.console.ConsoleServlet;
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
    private final ConnectionGuard guard;
    private boolean closed;

    private AirlockServer(Server jetty, SandboxRuntime runtime, McpHttpEndpoint mcp, ConnectionGuard guard, URI uri) {
        this.jetty = jetty;
        this.guard = guard;
        this.runtime = runtime;
        this.mcp = mcp;
        this.uri = uri;
    }

    public static AirlockServer start(ServerConfig config) {
        SandboxRuntime runtime = SandboxRuntime.open(config);
        McpHttpEndpoint mcp = null;
        ConnectionGuard guard = null;
        try {
            SandboxService service = runtime.service();
            QueuedThreadPool threads = new QueuedThreadPool();
            threads.setName("airlock-http");
            threads.setVirtualThreadsExecutor(Executors.newVirtualThreadPerTaskExecutor());
            Server jetty = new Server(threads);
            ServerConnector connector = new ServerConnector(jetty);
            connector.setHost(config.host());
            connector.setPort(config.port());
            jetty.addConnector(connector);
            guard = ConnectionGuard.apply(jetty, connector);
            ServletContextHandler context = new ServletContextHandler();
            context.setContextPath("/");
            // the web console (its pages at / and /console/*; its data through the REST API with a session cookie)
            ConsoleSessions sessions = new ConsoleSessions(java.time.Clock.systemUTC());
            context.addServlet(new ServletHolder("api", new ApiServlet(service, config, openApi(), sessions)), "/*");
            ServletHolder console = new ServletHolder("console", new ConsoleServlet(service, sessions, config.host()));
            context.getServletHandler().addServletWithMapping(console, "");
            context.getServletHandler().addServletWithMapping(console, "/console/*");
            context.getServletHandler().addServletWithMapping(console, ConsoleServlet.FAVICON);
            context.addFilter(new org.eclipse.jetty.ee10.servlet.FilterHolder(new UnreadBodies()), "/*", java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
            context.addFilter(new org.eclipse.jetty.ee10.servlet.FilterHolder(new SecurityHeaders()), "/*", java.util.EnumSet.of(jakarta.servlet.DispatcherType.REQUEST));
            // The second interface over the same service: MCP (Streamable HTTP) at /mcp, behind the same token.
            mcp = McpHttpEndpoint.mount(context, service, config, config.authHint());
            // WebSocket upgrades (a terminal's attach endpoint), done by the API servlet after its checks
            JettyWebSocketServletContainerInitializer.configure(context, null);
            context.setErrorHandler(new JsonErrorHandler());
            jetty.setErrorHandler(new JsonErrorHandler());
            jetty.setHandler(context);
            jetty.setStopAtShutdown(false);
            jetty.start();
            runtime.listeningOn(connector.getLocalPort());
            URI uri = URI.create("http://" + hostForUri(config.host()) + ":" + connector.getLocalPort());
            return new AirlockServer(jetty, runtime, mcp, guard, uri);
        } catch (Exception e) {
            if (mcp != null) {
                mcp.close();
            }
            if (guard != null) {
                guard.close();
            }
            runtime.close();
            if (e instanceof AirlockException ae) {
                throw ae;
            }
            throw AirlockException.unavailable("cannot start the server on " + config.host() + ":" + config.port() + ": " + e.getMessage());
        }
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
        guard.close();
        mcp.close();
        runtime.close();
    }
}
