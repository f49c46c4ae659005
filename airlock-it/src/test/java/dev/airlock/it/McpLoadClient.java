package dev.airlock.it;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * One agent over MCP Streamable HTTP, through the official MCP Java SDK client: its own session,
 * the server's token, and the sandbox tools as calls. A tool result that is an error fails the
 * call, except a refusal by a limit (the documented 429 of MCP), which is {@link QuotaRefused}.
 */
final class McpLoadClient implements AutoCloseable {

    /** The MCP form of a 429: the server refused the call by a limit or quota. */
    static final class QuotaRefused extends RuntimeException {
        QuotaRefused(String message) {
            super(message);
        }
    }

    private final McpSyncClient client;

    McpLoadClient(URI server, String token, Duration requestTimeout) {
        HttpClientStreamableHttpTransport transport = HttpClientStreamableHttpTransport.builder(server.toString())
                .endpoint("/mcp")
                .jsonMapper(new JacksonMcpJsonMapper(JsonMapper.builder().build()))
                .requestBuilder(HttpRequest.newBuilder().header("Authorization", "Bearer " + token))
                .build();
        this.client = McpClient.sync(transport)
                .clientInfo(new McpSchema.Implementation("airlock-load", "1"))
                .requestTimeout(requestTimeout)
                .initializationTimeout(requestTimeout)
                .build();
        client.initialize();
    }

    /** Calls {@code tool} and returns its structured result; a tool error is an exception with its text. */
    @SuppressWarnings("unchecked")
    Map<String, Object> call(String tool, Map<String, Object> arguments) {
        McpSchema.CallToolResult r = client.callTool(new McpSchema.CallToolRequest(tool, arguments));
        if (Boolean.TRUE.equals(r.isError())) {
            String text = r.content().isEmpty() || !(r.content().getFirst() instanceof McpSchema.TextContent t) ? String.valueOf(r) : t.text();
            if (text.startsWith("Refused by a limit")) {
                throw new QuotaRefused(text);
            }
            throw new AssertionError(tool + " failed: " + text);
        }
        return (Map<String, Object>) r.structuredContent();
    }

    String create(long ttlSeconds) {
        return (String) call("sandbox_create", Map.of("ttlSeconds", ttlSeconds)).get("sandboxId");
    }

    Map<String, Object> exec(String sandbox, List<String> command) {
        return call("sandbox_exec", Map.of("sandboxId", sandbox, "command", command));
    }

    void write(String sandbox, String path, String content) {
        call("sandbox_write_file", Map.of("sandboxId", sandbox, "path", path, "content", content));
    }

    String read(String sandbox, String path) {
        return (String) call("sandbox_read_file", Map.of("sandboxId", sandbox, "path", path)).get("content");
    }

    List<?> list(String sandbox) {
        return (List<?>) call("sandbox_list_files", Map.of("sandboxId", sandbox)).get("entries");
    }

    void destroy(String sandbox) {
        call("sandbox_destroy", Map.of("sandboxId", sandbox));
    }

    @Override
    public void close() {
        client.closeGracefully();
    }
}
