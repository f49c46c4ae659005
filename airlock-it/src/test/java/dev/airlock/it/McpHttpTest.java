package dev.airlock.it;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * MCP over Streamable HTTP at /mcp of {@code airlock serve}: the TypeScript SDK's HTTP client with
 * the API token, plus what must be refused (no token, foreign Host, foreign Origin) and what ends
 * with the session.
 */
class McpHttpTest extends McpClientScenarios {

    private static final String INITIALIZE = """
            {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}""";

    @TempDir
    static Path dataDir;
    private static AirlockServer server;
    private static JsonNode report;

    @BeforeAll
    static void runTheClient() throws Exception {
        server = AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(1));
        String[] scenarios = new String[SCENARIOS.length + 2];
        System.arraycopy(SCENARIOS, 0, scenarios, 0, SCENARIOS.length);
        scenarios[SCENARIOS.length] = "unauthenticated";
        scenarios[SCENARIOS.length + 1] = "sessionEnd";
        report = McpNode.client(env(), scenarios);
    }

    static Map<String, String> env() {
        return Map.of("MCP_TRANSPORT", "http", "MCP_URL", server.uri() + "/mcp", "MCP_TOKEN", server.token());
    }

    @AfterAll
    static void noSandboxOutlivesTheServer() {
        if (server != null) {
            server.close();
        }
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty());
    }

    @Override
    JsonNode report() {
        return report;
    }

    @Test
    void withoutTheTokenTheClientIsRefused() {
        JsonNode r = scenario("unauthenticated");
        assertThat(r.get("status").asInt()).isEqualTo(401);
        assertThat(r.get("wwwAuthenticate").asString()).isEqualTo("Bearer");
        assertThat(r.at("/body/jsonrpc").asString()).isEqualTo("2.0");
        assertThat(r.at("/body/error/message").asString()).contains("bearer token", dataDir.resolve("token").toString());
        assertThat(r.get("clientError").asString()).contains("bearer token");
    }

    @Test
    void sandboxesEndWithTheSessionUnlessMadeWithAnExplicitLifetime() {
        JsonNode r = scenario("sessionEnd");
        assertThat(r.get("boundEndsWithSession").asBoolean()).isTrue();
        assertThat(r.get("keptEndsWithSession").asBoolean()).isFalse();
        assertThat(r.get("liveAfterSessionEnd").toString()).doesNotContain(r.get("bound").asString()).contains(r.get("kept").asString());
    }

    @Test
    void aForeignOriginIsRefusedEvenWithTheToken() throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(server.uri() + "/mcp"))
                .header("Authorization", "Bearer " + server.token())
                .header("Origin", "http://evil.example.com")
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(INITIALIZE)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(403);
        JsonNode body = JsonMapper.builder().build().readTree(r.body());
        assertThat(body.at("/error/message").asString()).contains("Origin", "evil.example.com", "DNS-rebinding");
    }

    @Test
    void aLocalOriginIsAccepted() throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(server.uri() + "/mcp"))
                .header("Authorization", "Bearer " + server.token())
                .header("Origin", "http://localhost:6274")
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(INITIALIZE)).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Mcp-Session-Id")).isPresent();
    }

    @Test
    void aForeignHostIsRefusedEvenWithTheToken() throws Exception {
        // java.net.http will not send a Host of our choosing: speak HTTP/1.1 by hand.
        String request = "POST /mcp HTTP/1.1\r\nHost: attacker.example.com:" + server.uri().getPort() + "\r\n"
                + "Authorization: Bearer " + server.token() + "\r\nContent-Type: application/json\r\n"
                + "Accept: application/json, text/event-stream\r\nContent-Length: " + INITIALIZE.getBytes(StandardCharsets.UTF_8).length
                + "\r\nConnection: close\r\n\r\n" + INITIALIZE;
        try (Socket socket = new Socket(server.uri().getHost(), server.uri().getPort())) {
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = socket.getInputStream();
            String response = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            assertThat(response).startsWith("HTTP/1.1 403");
            assertThat(response).contains("\"jsonrpc\":\"2.0\"", "Host header 'attacker.example.com:", "DNS-rebinding");
        }
    }
}
