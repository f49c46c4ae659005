package dev.airlock.it;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code airlock mcp} as an MCP host runs it: the TypeScript SDK's stdio client starts the CLI as
 * a subprocess and speaks MCP over its stdin and stdout. When the client closes, the session ends
 * and every sandbox it made is destroyed.
 */
class McpStdioTest extends McpClientScenarios {

    @TempDir
    static Path dataDir;
    private static JsonNode report;

    @BeforeAll
    static void runTheClient() throws Exception {
        report = McpNode.client(Map.of("MCP_TRANSPORT", "stdio", "MCP_COMMAND", McpNode.json(McpNode.airlockMcp(dataDir))),
                SCENARIOS);
    }

    @AfterAll
    static void theSessionsSandboxesAreGoneWithIt() {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty());
    }

    @Override
    JsonNode report() {
        return report;
    }
}
