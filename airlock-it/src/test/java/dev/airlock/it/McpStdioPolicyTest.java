package dev.airlock.it;

import dev.airlock.cli.CliProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The policy over the MCP stdio door, as a user runs it: {@code airlock mcp --client} shows a
 * stdio client (the TypeScript SDK's) only its tools, and refuses to start for a client the policy
 * does not have. Here rather than beside airlock-cli's PolicyCommandTest because it needs the
 * real MCP clients from npm ({@link McpNode}).
 */
class McpStdioPolicyTest {

    @Test
    void aStdioSessionActsAsItsClient(@TempDir Path dir) throws Exception {
        Path policy = dir.resolve("policy.yaml");
        Files.writeString(policy, """
                profiles: {default: {}}
                clients:
                  viewer: {tokenSha256: %s, profiles: [default], allow: [sandbox.read]}
                  builder: {tokenSha256: %s, profiles: [default], allow: [run]}
                """.formatted("ab".repeat(32), "cd".repeat(32)));
        List<String> command = new java.util.ArrayList<>(McpNode.airlockMcp(dir.resolve("data")));
        command.addAll(List.of("--policy", policy.toString(), "--client", "viewer"));
        JsonNode viewer = McpNode.client(Map.of("MCP_TRANSPORT", "stdio", "MCP_COMMAND", McpNode.json(command)), "toolNames");
        assertThat(viewer.path("toolNames").valueStream().map(JsonNode::asString)).containsExactly("sandbox_list");
        command.set(command.size() - 1, "builder");
        JsonNode builder = McpNode.client(Map.of("MCP_TRANSPORT", "stdio", "MCP_COMMAND", McpNode.json(command)), "toolNames", "languages");
        assertThat(builder.path("toolNames").valueStream().map(JsonNode::asString)).containsExactly("run_code");
        assertThat(builder.path("languages").path("python").path("content").toString()).contains("42");

        // a client the policy does not have: the session does not start
        command.set(command.size() - 1, "nobody");
        CliProcess unknown = CliProcess.run(command.subList(4, command.size()).toArray(String[]::new));
        assertThat(unknown.exitCode()).isEqualTo(2);
        assertThat(unknown.stderr()).contains("no client 'nobody'", "viewer", "builder");
    }
}
