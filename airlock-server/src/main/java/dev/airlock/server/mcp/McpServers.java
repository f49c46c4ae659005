package dev.airlock.server.mcp;

import dev.airlock.core.Printable;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.policy.Client;
import dev.airlock.server.command.CommandApi;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpAsyncServer;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.JSONRPCResponse.JSONRPCError;
import tools.jackson.databind.annotation.JsonSerialize;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.util.StdConverter;

import java.util.LinkedHashMap;
import java.util.Map;

/** The MCP server itself, the same for both transports: identity, capabilities, tools. */
final class McpServers {

    static final String NAME = "airlock";
    static final String VERSION = "0.1.0";
    /** Actor names of the two transports (an HTTP call's actor adds its session: {@code mcp-http:<session>}). */
    static final String STDIO = "mcp-stdio";
    static final String HTTP = "mcp-http";

    static final McpJsonMapper JSON = new JacksonMcpJsonMapper(JsonMapper.builder()
            .addMixIn(McpSchema.ElicitFormRequest.class, ElicitationWithoutMode.class)
            .addMixIn(JSONRPCError.class, ErrorsNameTheTool.class).build());

    /**
     * SDK 2.1 with Jackson 3 cannot write an elicitation request: its {@code mode} is both the
     * type id and a property ("Conflict between type id property 'mode' and bean property").
     * Left out, a form request is what a client assumes.
     */
    private interface ElicitationWithoutMode {
        @com.fasterxml.jackson.annotation.JsonIgnore
        String mode();
    }

    /** Writes every JSON-RPC error through {@link UnknownToolNamed}. */
    @JsonSerialize(converter = UnknownToolNamed.class)
    private interface ErrorsNameTheTool {
    }

    /**
     * SDK 2.1 answers a call of a tool this client does not have (none such, or one its policy does
     * not grant: the two look alike on purpose) with the fixed message "Unknown tool:
     * invalid_tool_name" and the name only in {@code data}, which clients do not show. Written out,
     * the message names the tool the client asked for (printable, cut at 100 characters) and where
     * the right names are (the name in {@code data} cut alike: the SDK echoes all of it); every other error is written as it is.
     */
    static final class UnknownToolNamed extends StdConverter<JSONRPCError, Map<String, Object>> {
        private static final String SDK_MESSAGE = "Unknown tool: invalid_tool_name";
        private static final String SDK_DATA = "Tool not found: ";

        @Override
        public Map<String, Object> convert(JSONRPCError e) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("code", e.code());
            if (SDK_MESSAGE.equals(e.message()) && e.data() instanceof String d && d.startsWith(SDK_DATA)) {
                String name = Printable.of(d.substring(SDK_DATA.length()), 100);
                out.put("message", "Unknown tool: " + name + " (tools/list names the tools this client may call)");
                out.put("data", SDK_DATA + name);
                return out;
            }
            out.put("message", e.message());
            if (e.data() != null) {
                out.put("data", e.data());
            }
            return out;
        }
    }

    private static final String INSTRUCTIONS = """
            Airlock runs code in disposable, isolated Linux sandboxes (%s).
            Use run_code for a one-off program (the sandbox is destroyed afterwards; files written to
            /workspace/output come back). For work in several steps, sandbox_create a sandbox, then use
            sandbox_write_file, sandbox_exec and sandbox_read_file, and sandbox_destroy it when done.
            Output streams as log messages while a program runs; cancelling a call kills the program.""";

    private McpServers() {
    }

    /** The server one client sees: only the tools its policy grants. */
    static McpAsyncServer build(McpServer.AsyncSpecification<?> spec, CommandApi service, ServerConfig config,
                                SessionSandboxes sessions, RunningCalls calls, String transport, Client client) {
        return build(spec, service, client, ToolCatalog.tools(new SandboxTools(service, config, sessions, calls, transport, client), config));
    }

    /** The server {@code client} sees, with {@code tools}, the tools its policy grants ({@link ToolCatalog#tools}). */
    static McpAsyncServer build(McpServer.AsyncSpecification<?> spec, CommandApi service, Client client,
                                java.util.List<io.modelcontextprotocol.server.McpServerFeatures.AsyncToolSpecification> tools) {
        return spec.serverInfo(NAME, VERSION)
                .jsonMapper(JSON)
                .jsonSchemaValidator(new PrintableSchemaValidator())
                .instructions(INSTRUCTIONS.formatted(ToolCatalog.network(service.policy().profile(client.profiles().getFirst()))))
                .capabilities(McpSchema.ServerCapabilities.builder().tools(false).logging().build())
                .tools(tools)
                .build();
    }
}
