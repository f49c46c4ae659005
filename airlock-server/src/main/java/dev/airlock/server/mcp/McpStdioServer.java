package dev.airlock.server.mcp;

import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.policy.Client;
import dev.airlock.server.command.CommandApi;
import io.modelcontextprotocol.server.McpAsyncServer;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * MCP over stdio ({@code airlock mcp}): one session, the client on the other end of stdin and
 * stdout. Only protocol goes to {@code out}. The session ends when stdin closes; then its
 * sandboxes are destroyed.
 */
public final class McpStdioServer {

    private static final Logger LOG = LoggerFactory.getLogger(McpStdioServer.class);
    /** The one session of a stdio server, for cancellation keys. */
    private static final String SESSION = "stdio";

    private McpStdioServer() {
    }

    /**
     * Serves {@code client} (the process that started {@code airlock mcp} acts as it) until
     * {@code in} ends, then closes the session and destroys the sandboxes it made.
     */
    public static void serve(CommandApi service, ServerConfig config, Client client, InputStream in, OutputStream out)
            throws InterruptedException {
        RunningCalls calls = new RunningCalls();
        InboundMessages inbound = new InboundMessages(calls);
        CountDownLatch ended = new CountDownLatch(1);
        InputStream observed = new ObservedLines(in, line -> inbound.observe(SESSION, line).message(), ended::countDown);
        StdioServerTransportProvider transport = new StdioServerTransportProvider(McpServers.JSON, observed, out);
        try (SessionSandboxes sessions = new SessionSandboxes(service, false)) {
            McpAsyncServer server = McpServers.build(McpServer.async(transport), service, config, sessions, calls, McpServers.STDIO, client);
            ended.await();
            LOG.info("stdin closed: ending the MCP session");
            try {
                server.closeGracefully().block(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                LOG.debug("MCP server did not close gracefully: {}", e.toString());
            }
        }
    }
}
