package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.OciDriver;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.util.List;
import java.util.concurrent.Executors;

/**
 * {@code airlock serve}: the engine behind an HTTP server. Requests run on virtual threads, so a
 * long execution holds no platform thread. Closing it destroys every sandbox it holds.
 */
public final class AirlockServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(AirlockServer.class);

    private final Server jetty;
    private final SandboxService service;
    private final Engine engine;
    private final SandboxStore store;
    private final TokenStore tokens;
    private final URI uri;
    private boolean closed;

    private AirlockServer(Server jetty, SandboxService service, Engine engine, SandboxStore store, TokenStore tokens, URI uri) {
        this.jetty = jetty;
        this.service = service;
        this.engine = engine;
        this.store = store;
        this.tokens = tokens;
        this.uri = uri;
    }

    public static AirlockServer start(ServerConfig config) {
        try {
            Files.createDirectories(config.dataDir());
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot create the data directory " + config.dataDir() + ": " + e.getMessage());
        }
        TokenStore tokens = TokenStore.loadOrCreate(config.dataDir().resolve("token"));
        SandboxStore store = SandboxStore.open(config.dataDir().resolve("airlock.db"));
        Engine engine = null;
        SandboxService service = null;
        try {
            engine = new Engine(new OciDriver(config.driver()), config.poolSize(), SandboxSpec.defaults());
            ServerMetrics metrics = new ServerMetrics();
            service = new SandboxService(config, engine, store, metrics);

            QueuedThreadPool threads = new QueuedThreadPool();
            threads.setName("airlock-http");
            threads.setVirtualThreadsExecutor(Executors.newVirtualThreadPerTaskExecutor());
            Server jetty = new Server(threads);
            ServerConnector connector = new ServerConnector(jetty);
            connector.setHost(config.host());
            connector.setPort(config.port());
            jetty.addConnector(connector);
            ServletContextHandler context = new ServletContextHandler();
            context.setContextPath("/");
            context.addServlet(new ServletHolder("api", new ApiServlet(service, tokens, config, metrics, openApi())), "/*");
            context.setErrorHandler(new JsonErrorHandler());
            jetty.setErrorHandler(new JsonErrorHandler());
            jetty.setHandler(context);
            jetty.setStopAtShutdown(false);
            jetty.start();
            URI uri = URI.create("http://" + hostForUri(config.host()) + ":" + connector.getLocalPort());
            return new AirlockServer(jetty, service, engine, store, tokens, uri);
        } catch (Exception e) {
            if (service != null) {
                service.close();
            }
            if (engine != null) {
                engine.close();
            }
            store.close();
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

    public String token() {
        return tokens.value();
    }

    /** What the start reaped of earlier, crashed servers: one line each. */
    public List<String> reapedAtStart() {
        return service.reapedAtStart();
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
        try {
            service.close();
            engine.close();
        } finally {
            store.close();
        }
    }
}
