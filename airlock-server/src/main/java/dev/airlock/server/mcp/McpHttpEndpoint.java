package dev.airlock.server.mcp;

import dev.airlock.server.SandboxService;
import dev.airlock.server.ServerConfig;
import io.modelcontextprotocol.server.McpAsyncServer;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import jakarta.servlet.DispatcherType;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.EnumSet;
import java.util.function.Predicate;

/**
 * MCP over Streamable HTTP at {@value #PATH} on the REST API's server: the SDK's servlet transport,
 * with {@link McpHttpGuard} in front of it (bearer token, Host and Origin checks, cancellation and
 * session tracking).
 */
public final class McpHttpEndpoint implements AutoCloseable {

    public static final String PATH = "/mcp";
    private static final Logger LOG = LoggerFactory.getLogger(McpHttpEndpoint.class);

    private final McpAsyncServer server;
    private final SessionSandboxes sessions;

    private McpHttpEndpoint(McpAsyncServer server, SessionSandboxes sessions) {
        this.server = server;
        this.sessions = sessions;
    }

    /**
     * Mounts the endpoint in {@code context}.
     *
     * @param authorization whether an {@code Authorization} header value carries the API token
     * @param authHint      what an unauthenticated client is told to send
     */
    public static McpHttpEndpoint mount(ServletContextHandler context, SandboxService service, ServerConfig config,
                                        Predicate<String> authorization, String authHint) {
        HttpServletStreamableServerTransportProvider transport = HttpServletStreamableServerTransportProvider.builder()
                .jsonMapper(McpServers.JSON)
                .mcpEndpoint(PATH)
                .sessionSweepInterval(SessionSandboxes.IDLE_SESSION)
                .build();
        RunningCalls calls = new RunningCalls();
        SessionSandboxes sessions = new SessionSandboxes(service, true);
        McpAsyncServer server = McpServers.build(McpServer.async(transport), service, config, sessions, calls, McpServers.HTTP);

        ServletHolder servlet = new ServletHolder("mcp", transport);
        servlet.setAsyncSupported(true);
        context.addServlet(servlet, PATH);
        FilterHolder guard = new FilterHolder(new McpHttpGuard(config.host(), authorization, authHint, service.audit(),
                new InboundMessages(calls), sessions));
        guard.setAsyncSupported(true);
        context.addFilter(guard, PATH, EnumSet.of(DispatcherType.REQUEST));
        return new McpHttpEndpoint(server, sessions);
    }

    /** Ends every session (destroying the sandboxes they own) and stops the MCP server. */
    @Override
    public void close() {
        try {
            server.closeGracefully().block(Duration.ofSeconds(5));
        } catch (RuntimeException e) {
            LOG.debug("MCP server did not close gracefully: {}", e.toString());
        }
        sessions.close();
    }
}
