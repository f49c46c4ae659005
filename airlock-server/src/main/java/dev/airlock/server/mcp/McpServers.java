package dev.airlock.server.mcp;

import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.policy.Client;
import dev.airlock.server.command.CommandApi;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpAsyncServer;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.spec.McpSchema;
import tools.jackson.databind.json.JsonMapper;

/** The MCP server itself, the same for both transports: identity, capabilities, tools. */
final class McpServers {

    static final String NAME = "airlock";
    static final String VERSION = "0.1.0";
    /** Actor names of the two transports (an HTTP call's actor adds its session: {@code mcp-http:<session>}). */
    static final String STDIO = "mcp-stdio";
    static final String HTTP = "mcp-http";

    static final McpJsonMapper JSON = new JacksonMcpJsonMapper(JsonMapper.builder()
            .addMixIn(McpSchema.ElicitFormRequest.class, ElicitationWithoutMode.class).build());

    /**
     * SDK 2.1 with Jackson 3 cannot write an elicitation request: its {@code mode} is both the
     * type id and a property ("Conflict between type id property 'mode' and bean property").
     * Left out, a form request is what a client assumes.
     */
    private interface ElicitationWithoutMode {
        @com.fasterxml.jackson.annotation.JsonIgnore
        String mode();
    }

    private static final String INSTRUCTIONS = """
            Airlock runs code in disposable, isolated Linux sandboxes (%s).
            Use run_code for a one-off program (the sandbox is destroyed afterwards; files written to
            /workspace/output come back). For work in several steps, sandbox_create a sandbox, then use
            sandbox_write_file, sandbox_exec and sandbox_read_file, and sandbox_destroy it when done.
            Output streams as log messages while a program runs; cancelling a call kills the program.""";

    private McpServers() {
    }

    static McpServer.AsyncSpecification<?> configure(McpServer.AsyncSpecification<?> spec, CommandApi service,
                                                     ServerConfig config, SessionSandboxes sessions, RunningCalls calls,
                                                     String transport, Client client) {
        return spec.serverInfo(NAME, VERSION)
                .jsonMapper(JSON)
                .jsonSchemaValidator(new PrintableSchemaValidator())
                .instructions(INSTRUCTIONS.formatted(ToolCatalog.network(service.policy().profile(client.profiles().getFirst()))))
                .capabilities(McpSchema.ServerCapabilities.builder().tools(false).logging().build())
                .tools(ToolCatalog.tools(new SandboxTools(service, config, sessions, calls, transport, client), config));
    }

    /** The server one client sees: only the tools its policy grants. */
    static McpAsyncServer build(McpServer.AsyncSpecification<?> spec, CommandApi service, ServerConfig config,
                                SessionSandboxes sessions, RunningCalls calls, String transport, Client client) {
        return configure(spec, service, config, sessions, calls, transport, client).build();
    }
}
