package dev.airlock.it;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The MCP conformance suite's generic server scenarios against /mcp. The suite cannot send the API
 * token, so it talks to /mcp through src/test/node/auth-proxy.mjs, which adds the token and leaves
 * foreign Host and Origin headers for the server to refuse. The suite's other server scenarios
 * call fixture tools, resources and prompts of its own reference server, which Airlock does not
 * have; they are not run.
 */
class McpConformanceTest {

    @TempDir
    static Path dataDir;
    private static AirlockServer server;
    private static Process proxy;
    private static int proxyPort;

    @BeforeAll
    static void startServerAndProxy() throws Exception {
        McpNode.install();
        server = AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(0));
        proxy = new ProcessBuilder("node", "auth-proxy.mjs", server.uri().toString(), server.token())
                .directory(McpNode.HOME.toFile()).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        String line = new BufferedReader(new InputStreamReader(proxy.getInputStream(), StandardCharsets.UTF_8)).readLine();
        assertThat(line).as("the proxy's first line").startsWith("PORT ");
        proxyPort = Integer.parseInt(line.substring(5).trim());
    }

    @AfterAll
    static void stop() throws Exception {
        if (proxy != null) {
            proxy.destroy();
            proxy.waitFor(10, TimeUnit.SECONDS);
        }
        if (server != null) {
            server.close();
        }
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty());
    }

    @ParameterizedTest
    @ValueSource(strings = {"server-initialize", "ping", "tools-list", "logging-set-level", "server-sse-multiple-streams",
            "dns-rebinding-protection"})
    void passes(String scenario) throws Exception {
        McpNode.Result r = McpNode.run(List.of("node", "node_modules/@modelcontextprotocol/conformance/dist/index.js", "server",
                        "--url", "http://localhost:" + proxyPort + "/mcp", "--scenario", scenario),
                Map.of(), Duration.ofMinutes(3));
        assertThat(r.exitCode()).as("%s\n%s", r.stdout(), r.stderr()).isZero();
        assertThat(r.stdout()).contains(" 0 failed");
    }
}
