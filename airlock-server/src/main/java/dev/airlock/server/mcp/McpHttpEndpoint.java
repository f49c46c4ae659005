package dev.airlock.server.mcp;

import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.policy.Client;
import dev.airlock.server.command.CommandApi;
import io.modelcontextprotocol.server.McpAsyncServer;
import io.modelcontextprotocol.server.McpServerFeatures.AsyncToolSpecification;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * MCP over Streamable HTTP at {@value #PATH} on the REST API's server: the SDK's servlet transport,
 * with {@link McpHttpGuard} in front of it (bearer token, Host and Origin checks, cancellation and
 * session tracking).
 */
public final class McpHttpEndpoint implements AutoCloseable, dev.airlock.server.command.ToolCalls {

    public static final String PATH = "/mcp";
    private static final Logger LOG = LoggerFactory.getLogger(McpHttpEndpoint.class);

    private final List<McpAsyncServer> servers;
    private final SessionSandboxes sessions;
    private final RunningCalls calls;
    /** Each client's tools, by client: what the calls another node's MCP door sends on run with. */
    private final Map<String, List<AsyncToolSpecification>> tools;

    /** How much MCP state the server holds now: what a client's requests can make it keep, each bounded. */
    public record StateSizes(int sessions, int endedSessions, int trackedCalls) {
    }

    private McpHttpEndpoint(List<McpAsyncServer> servers, SessionSandboxes sessions, RunningCalls calls,
                            Map<String, List<AsyncToolSpecification>> tools) {
        this.servers = servers;
        this.sessions = sessions;
        this.calls = calls;
        this.tools = tools;
    }

    /**
     * A tool call another node's MCP door sent on (a node of a cluster's peer port takes it): run
     * with {@code client}'s tools here, as the session it came in on node {@code node}.
     */
    @Override
    public byte[] call(Client client, String node, byte[] call) {
        Map<String, Object> sent;
        try {
            sent = McpServers.JSON.readValue(call, new io.modelcontextprotocol.json.TypeRef<Map<String, Object>>() { });
        } catch (java.io.IOException e) {
            throw dev.airlock.core.AirlockException.invalid("a forwarded tool call that is not a JSON object: " + e.getMessage());
        }
        try {
            return McpServers.JSON.writeValueAsBytes(ToolCatalog.forwarded(tools.getOrDefault(client.name(), List.of()), node, sent));
        } catch (java.io.IOException e) {
            throw new dev.airlock.core.AirlockException(dev.airlock.core.AirlockException.Kind.INTERNAL,
                    "cannot write a tool's result: " + e.getMessage(), e);
        }
    }

    @Override
    public void sessionEnded(String node, String session) {
        sessions.end(SessionSandboxes.remote(node, session), "ended on node " + node);
    }

    public StateSizes stateSizes() {
        return new StateSizes(sessions.size(), sessions.endedSize(), calls.size());
    }

    /**
     * Mounts the endpoint in {@code context}: one MCP server per client of the policy, each with
     * only the tools that client is granted. The guard finds the client by its token and hands
     * the request to that client's server, so a session of one client is unknown to another's.
     *
     * @param authHint what an unauthenticated client is told to send
     */
    public static McpHttpEndpoint mount(ServletContextHandler context, CommandApi service, ServerConfig config, String authHint) {
        RunningCalls calls = new RunningCalls();
        SessionSandboxes sessions = new SessionSandboxes(service, true);
        Map<String, HttpServlet> transports = new LinkedHashMap<>();
        List<McpAsyncServer> servers = new ArrayList<>();
        Map<String, List<AsyncToolSpecification>> tools = new LinkedHashMap<>();
        for (Client client : service.policy().clients().values()) {
            HttpServletStreamableServerTransportProvider transport = HttpServletStreamableServerTransportProvider.builder()
                    .jsonMapper(McpServers.JSON)
                    .mcpEndpoint(PATH)
                    .sessionSweepInterval(SessionSandboxes.IDLE_SESSION)
                    .build();
            List<AsyncToolSpecification> granted = ToolCatalog.tools(new SandboxTools(service, config, sessions, calls, McpServers.HTTP, client),
                    config);
            servers.add(McpServers.build(McpServer.async(transport), service, client, granted));
            tools.put(client.name(), granted);
            transports.put(client.name(), transport);
        }
        // Never reached: the guard answers every request itself, through the client's transport.
        ServletHolder servlet = new ServletHolder("mcp", new HttpServlet() {
        });
        servlet.setAsyncSupported(true);
        context.addServlet(servlet, PATH);
        FilterHolder guard = new FilterHolder(new McpHttpGuard(config.host(), service, transports, authHint,
                new InboundMessages(calls), sessions));
        guard.setAsyncSupported(true);
        context.addFilter(guard, PATH, EnumSet.of(DispatcherType.REQUEST));
        return new McpHttpEndpoint(List.copyOf(servers), sessions, calls, Map.copyOf(tools));
    }

    /** Ends every session (destroying the sandboxes they own) and stops the MCP server. */
    @Override
    public void close() {
        for (McpAsyncServer server : servers) {
            try {
                server.closeGracefully().block(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                LOG.debug("MCP server did not close gracefully: {}", e.toString());
            }
        }
        sessions.close();
    }
}
