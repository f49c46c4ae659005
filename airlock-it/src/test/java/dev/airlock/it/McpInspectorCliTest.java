package dev.airlock.it;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The MCP Inspector in CLI mode, a second independent client, against {@code airlock mcp}. */
class McpInspectorCliTest {

    @TempDir
    Path dataDir;

    @AfterEach
    void nothingOfAnySandboxRemains() {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty());
    }

    private JsonNode inspect(String... methodArgs) throws Exception {
        McpNode.install();
        List<String> command = new ArrayList<>(List.of("node", "node_modules/@modelcontextprotocol/inspector/cli/build/cli.js", "--cli"));
        command.addAll(McpNode.airlockMcp(dataDir));
        command.addAll(List.of(methodArgs));
        McpNode.Result r = McpNode.run(command, Map.of(), Duration.ofMinutes(3));
        assertThat(r.exitCode()).as("inspector failed:\n%s\n%s", r.stdout(), r.stderr()).isZero();
        return tools.jackson.databind.json.JsonMapper.builder().build().readTree(r.stdout());
    }

    @Test
    void listsTheTools() throws Exception {
        JsonNode tools = inspect("--method", "tools/list").get("tools");
        List<String> names = new ArrayList<>();
        tools.forEach(t -> names.add(t.get("name").asString()));
        assertThat(names).contains("run_code", "sandbox_create", "sandbox_exec", "sandbox_destroy");
        assertThat(tools.get(0).get("outputSchema")).isNotNull();
    }

    @Test
    void runsCode() throws Exception {
        JsonNode result = inspect("--method", "tools/call", "--tool-name", "run_code",
                "--tool-arg", "language=python", "code=print(6 * 7)");
        assertThat(result.get("isError").asBoolean()).isFalse();
        assertThat(result.at("/structuredContent/stdout").asString()).isEqualTo("42\n");
        assertThat(result.at("/content/0/text").asString()).contains("\"exitCode\":0");
    }
}
