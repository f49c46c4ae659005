package dev.airlock.server.mcp;

import io.modelcontextprotocol.spec.McpSchema.JSONRPCResponse;
import io.modelcontextprotocol.spec.McpSchema.JSONRPCResponse.JSONRPCError;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/** The error the SDK gives for a tool a client does not have, as both transports write it. */
class UnknownToolNamedTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private static JsonNode written(JSONRPCError error) throws Exception {
        return JSON.readTree(McpServers.JSON.writeValueAsString(JSONRPCResponse.error(7, error))).path("error");
    }

    @Test
    void theMessageNamesTheToolTheClientAskedFor() throws Exception {
        JsonNode e = written(new JSONRPCError(-32602, "Unknown tool: invalid_tool_name", "Tool not found: sandbox_frobnicate"));
        assertThat(e.path("code").asInt()).isEqualTo(-32602);
        assertThat(e.path("message").asString()).isEqualTo("Unknown tool: sandbox_frobnicate (tools/list names the tools this client may call)");
        assertThat(e.path("data").asString()).isEqualTo("Tool not found: sandbox_frobnicate");
    }

    @Test
    void aHugeOrUnprintableNameComesBackCutAndPrintable() throws Exception {
        JsonNode e = written(new JSONRPCError(-32602, "Unknown tool: invalid_tool_name", "Tool not found: a\u0007b\n" + "x".repeat(1 << 20)));
        assertThat(e.path("message").asString()).startsWith("Unknown tool: a?b?xxx").hasSizeLessThan(200);
        assertThat(e.path("data").asString()).startsWith("Tool not found: a?b?xxx").hasSizeLessThan(200);
    }

    @Test
    void everyOtherErrorIsWrittenAsItIs() throws Exception {
        JsonNode e = written(new JSONRPCError(-32601, "Method not found: tools/frob", null));
        assertThat(e.path("message").asString()).isEqualTo("Method not found: tools/frob");
        assertThat(e.has("data")).isFalse();
        JsonNode withData = written(new JSONRPCError(-32602, "Invalid params", java.util.Map.of("field", "name")));
        assertThat(withData.path("data").path("field").asString()).isEqualTo("name");
    }
}
