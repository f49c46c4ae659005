package dev.airlock.it;

import dev.airlock.client.Airlock;
import dev.airlock.client.ForbiddenException;
import dev.airlock.client.Limits;
import dev.airlock.client.SandboxSpec;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Each refusal path of the policy, over REST and MCP alike, against a real server: a wrong
 * token, an operation, profile or limit not granted, quotas, and other clients' sandboxes. Every
 * refusal says which rule refused, and is on the audit log.
 */
class AuthorizationTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String AGENT = "alk_agent-token-0123456789abcdef0123456789";
    private static final String READER = "alk_reader-token-0123456789abcdef012345678";
    private static final String BURST = "alk_burst-token-0123456789abcdef0123456789";
    private static LiveServer live;

    private static String hash(String token) {
        return HexFormat.of().formatHex(Policy.sha256(token));
    }

    @BeforeAll
    static void start() {
        live = LiveServer.withPolicy("""
                profiles:
                  small:
                    languages: [python, sh]
                    limits: {memory: 128m, timeoutSeconds: 10}
                    maxLimits: {memory: 256m, timeoutSeconds: 20}
                    maxLifetimeSeconds: 300
                  big:
                    limits: {memory: 512m}
                  web:
                    network:
                      allow: [{host: "*.example.test"}]
                      deny: [secret.example.test]
                clients:
                  local: {tokenFile: token, profiles: [small, big, web], allow: ["*"]}
                  agent:
                    tokenSha256: %s
                    profiles: [small]
                    allow: [run, sandbox.create, sandbox.read, sandbox.destroy, exec, files.read, files.write]
                    quotas: {sandboxes: 2}
                  reader: {tokenSha256: %s, profiles: [small], allow: [sandbox.read]}
                  burst:
                    tokenSha256: %s
                    profiles: [small]
                    allow: [sandbox.create, sandbox.destroy, exec]
                    quotas: {executionsPerMinute: 3}
                """.formatted(hash(AGENT), hash(READER), hash(BURST)), c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static JsonNode refused(HttpResponse<String> r, int status, String code, String... parts) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode error = JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asString()).isEqualTo(code);
        if (parts.length > 0) {
            assertThat(error.path("message").asString()).contains(parts);
        }
        return error;
    }

    private static String created(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body()).path("id").asString();
    }

    @Test
    void aWrongTokenIsUnauthenticated() {
        refused(live.raw("GET", "/v1/sandboxes", null, "alk_not-a-client-0123456789abcdef0123456789"), 401, "unauthenticated",
                "missing or wrong bearer token", "policy");
        refused(live.raw("GET", "/v1/sandboxes", null, null), 401, "unauthenticated");
        // a token's hash is not a token
        refused(live.raw("GET", "/v1/sandboxes", null, hash(AGENT)), 401, "unauthenticated");
    }

    @Test
    void anOperationNotGrantedIsForbiddenAndNamesTheRule() {
        refused(live.raw("POST", "/v1/sandboxes", "{}", READER), 403, "forbidden", "client 'reader' may not call sandbox.create",
                "rule clients.reader.allow");
        String id = created(live.raw("POST", "/v1/sandboxes", "{}", AGENT));
        try {
            refused(live.raw("POST", "/v1/sandboxes/" + id + "/ttl", "{\"ttlSeconds\": 60}", AGENT), 403, "forbidden",
                    "may not call sandbox.extend");
            refused(live.raw("POST", "/v1/sandboxes/" + id + "/pause", null, AGENT), 403, "forbidden", "may not call sandbox.pause");
            refused(live.raw("PUT", "/v1/sandboxes/" + id + "/network", "{}", AGENT), 403, "forbidden", "may not call network.update");
            refused(live.raw("GET", "/metrics", null, AGENT), 403, "forbidden", "may not call metrics");
            refused(live.raw("GET", "/v1/approvals", null, AGENT), 403, "forbidden", "may not call approvals");
        } finally {
            assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null, AGENT).statusCode()).isEqualTo(204);
        }
        List<AuditRecord> denies = live.audit(null, AuditRecord.AUTHORIZATION).stream()
                .filter(r -> r.detail().contains("\"decision\":\"deny\"") && r.actor().equals("reader@rest")).toList();
        assertThat(denies).isNotEmpty();
        assertThat(denies.getLast().detail()).contains("\"rule\":\"clients.reader.allow\"", "\"operation\":\"sandbox.create\"");
    }

    @Test
    void aProfileNotGrantedIsForbidden() {
        refused(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"big\"}", AGENT), 403, "forbidden",
                "client 'agent' may not use profile 'big'", "rule clients.agent.profiles");
        refused(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"nonesuch\"}", AGENT), 403, "forbidden", "profile 'nonesuch'");
    }

    @Test
    void aLimitAboveTheProfileIsForbidden() {
        refused(live.raw("POST", "/v1/sandboxes", "{\"limits\": {\"memory\": \"1g\"}}", AGENT), 403, "forbidden",
                "memory 1g > 256m", "rule profiles.small.maxLimits");
        refused(live.raw("POST", "/v1/sandboxes", "{\"limits\": {\"timeoutSeconds\": 60, \"pids\": 100000}}", AGENT), 400,
                "invalid_argument", "pids");
        assertThat(live.audit(null, AuditRecord.AUTHORIZATION)).anySatisfy(r -> {
            assertThat(r.actor()).isEqualTo("agent@rest");
            assertThat(r.detail()).contains("\"decision\":\"deny\"", "\"rule\":\"profiles.small.maxLimits\"", "\"operation\":\"sandbox.create\"");
        });
        refused(live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 3600}", AGENT), 403, "forbidden", "rule profiles.small.maxLifetimeSeconds");
        refused(live.raw("POST", "/v1/sandboxes", "{\"image\": \"debian\"}", AGENT), 403, "forbidden", "rule profiles.small.image");
        refused(live.raw("POST", "/v1/sandboxes", "{\"network\": {\"allow\": [{\"host\": \"pypi.org\"}]}}", AGENT), 403, "forbidden",
                "destination pypi.org:*", "rule profiles.small.network");
        // within the ceiling is fine, and the profile's defaults fill in what is not asked for
        String id = created(live.raw("POST", "/v1/sandboxes", "{\"limits\": {\"memory\": \"200m\"}}", AGENT));
        try {
            JsonNode s = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id, null, AGENT).body());
            assertThat(s.path("profile").asString()).isEqualTo("small");
            assertThat(s.path("owner").asString()).isEqualTo("agent");
            assertThat(s.path("limits").path("timeoutSeconds").asDouble()).isEqualTo(10.0);
            refused(live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"true\"], \"timeoutSeconds\": 100}", AGENT), 403,
                    "forbidden", "rule profiles.small.maxLimits.timeoutSeconds");
            refused(live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"language\": \"javascript\", \"code\": \"1\"}", AGENT), 403,
                    "forbidden", "language javascript", "rule profiles.small.languages");
            HttpResponse<String> ok = live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"language\": \"python\", \"code\": \"print(6*7)\"}", AGENT);
            assertThat(JSON.readTree(ok.body()).path("stdout").asString()).isEqualTo("42\n");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null, AGENT);
        }
    }

    @Test
    void aClientsNetworkKeepsTheProfilesDenyList() {
        // asking for the profile's wildcard without its deny list must not lift the deny
        String id = created(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"web\", \"network\": {\"allow\": [{\"host\": \"*.example.test\"}]}}"));
        try {
            JsonNode network = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id + "/network", null).body());
            assertThat(network.path("deny").valueStream().map(JsonNode::asString)).containsExactly("secret.example.test");
            HttpResponse<String> updated = live.raw("PUT", "/v1/sandboxes/" + id + "/network", "{\"allow\": [{\"host\": \"api.example.test\"}]}");
            assertThat(updated.statusCode()).as(updated.body()).isEqualTo(200);
            assertThat(JSON.readTree(updated.body()).path("deny").valueStream().map(JsonNode::asString)).containsExactly("secret.example.test");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    @Test
    void theSdkRaisesForbidden() {
        try (Airlock agent = Airlock.connect(live.uri(), AGENT)) {
            assertThatThrownBy(() -> agent.create(SandboxSpec.builder().limits(Limits.builder().memory("2g").build()).build()))
                    .isInstanceOf(ForbiddenException.class).hasMessageContaining("profiles.small.maxLimits");
            assertThatThrownBy(() -> agent.create(SandboxSpec.builder().profile("big").build()))
                    .isInstanceOf(ForbiddenException.class).hasMessageContaining("clients.agent.profiles");
        }
    }

    @Test
    void theSandboxQuotaIsPerClient() {
        List<String> ids = new ArrayList<>();
        try {
            ids.add(created(live.raw("POST", "/v1/sandboxes", "{}", AGENT)));
            ids.add(created(live.raw("POST", "/v1/sandboxes", "{}", AGENT)));
            refused(live.raw("POST", "/v1/sandboxes", "{}", AGENT), 429, "quota_exceeded", "already holds 2 sandboxes",
                    "rule clients.agent.quotas.sandboxes");
            // another client's quota is its own
            ids.add(created(live.raw("POST", "/v1/sandboxes", "{}")));
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + ids.removeLast(), null, live.token());
            ids.forEach(id -> live.raw("DELETE", "/v1/sandboxes/" + id, null, AGENT));
        }
    }

    @Test
    void theExecutionRateIsPerClient() {
        String id = created(live.raw("POST", "/v1/sandboxes", "{}", BURST));
        try {
            for (int i = 0; i < 3; i++) {
                assertThat(live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"true\"]}", BURST).statusCode()).isEqualTo(200);
            }
            refused(live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"true\"]}", BURST), 429, "quota_exceeded",
                    "3 executions in the last minute", "rule clients.burst.quotas.executionsPerMinute");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null, BURST);
        }
    }

    @Test
    void anotherClientsSandboxDoesNotExistForIt() {
        String id = created(live.raw("POST", "/v1/sandboxes", "{}", AGENT));
        try {
            refused(live.raw("GET", "/v1/sandboxes/" + id, null, READER), 404, "not_found", id);
            refused(live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"true\"]}", live.token()), 404, "not_found");
            refused(live.raw("DELETE", "/v1/sandboxes/" + id, null, live.token()), 404, "not_found");
            JsonNode list = JSON.readTree(live.raw("GET", "/v1/sandboxes", null, READER).body()).path("sandboxes");
            assertThat(list.valueStream().map(s -> s.path("id").asString())).doesNotContain(id);
            JsonNode mine = JSON.readTree(live.raw("GET", "/v1/sandboxes", null, AGENT).body()).path("sandboxes");
            assertThat(mine.valueStream().map(s -> s.path("id").asString())).contains(id);
        } finally {
            assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null, AGENT).statusCode()).isEqualTo(204);
        }
    }

    @Test
    void mcpShowsEachClientOnlyItsToolsAndRefusesTheRest() throws Exception {
        Map<String, String> env = Map.of("MCP_TRANSPORT", "http", "MCP_URL", live.uri() + "/mcp");
        // three clients at once: each is a Node process of its own, most of whose time is its start
        McpNode.install();
        var readerRun = java.util.concurrent.CompletableFuture.supplyAsync(() -> client(with(env, READER), "toolNames", "forbiddenRunCode"));
        var agentRun = java.util.concurrent.CompletableFuture.supplyAsync(() -> client(with(env, AGENT), "toolNames"));
        var burstRun = java.util.concurrent.CompletableFuture.supplyAsync(() -> client(with(env, BURST), "toolNames"));
        JsonNode reader = readerRun.get(10, java.util.concurrent.TimeUnit.MINUTES);
        assertThat(reader.path("toolNames").valueStream().map(JsonNode::asString)).containsExactly("sandbox_list");
        // answered as a tool that does not exist (named, as the client asked for it): nothing tells the client what it lacks
        assertThat(reader.path("forbiddenRunCode").path("rejected").asString()).contains("Unknown tool: run_code (tools/list names");
        JsonNode agent = agentRun.get(10, java.util.concurrent.TimeUnit.MINUTES);
        assertThat(agent.path("toolNames").valueStream().map(JsonNode::asString)).containsExactly("interpreter_context", "interpreter_run", "run_code",
                "sandbox_create", "sandbox_destroy", "sandbox_exec", "sandbox_fork", "sandbox_list", "sandbox_list_files", "sandbox_read_file", "sandbox_write_file");
        JsonNode burst = burstRun.get(10, java.util.concurrent.TimeUnit.MINUTES);
        assertThat(burst.path("toolNames").valueStream().map(JsonNode::asString)).containsExactly("interpreter_context", "interpreter_run",
                "sandbox_create", "sandbox_destroy", "sandbox_exec", "sandbox_fork");
    }

    @Test
    void anMcpSessionOfOneClientIsUnknownToAnother() throws Exception {
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        java.net.URI mcp = java.net.URI.create(live.uri() + "/mcp");
        HttpResponse<String> init = http.send(mcpPost(mcp, AGENT, null, """
                {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}"""),
                HttpResponse.BodyHandlers.ofString());
        assertThat(init.statusCode()).as(init.body()).isEqualTo(200);
        String session = init.headers().firstValue("Mcp-Session-Id").orElseThrow();
        http.send(mcpPost(mcp, AGENT, session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"), HttpResponse.BodyHandlers.ofString());
        String list = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
        // the agent's own session lists its tools
        assertThat(http.send(mcpPost(mcp, AGENT, session, list), HttpResponse.BodyHandlers.ofString()).body()).contains("run_code");
        // the reader presenting the agent's session id gets no session and no tools
        HttpResponse<String> hijack = http.send(mcpPost(mcp, READER, session, list), HttpResponse.BodyHandlers.ofString());
        assertThat(hijack.statusCode()).as(hijack.body()).isEqualTo(404);
        assertThat(hijack.body()).contains("does not exist for this client");
        assertThat(hijack.body()).doesNotContain("run_code");
        String call = "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"run_code\",\"arguments\":{\"language\":\"python\",\"code\":\"print(1)\"}}}";
        HttpResponse<String> hijackCall = http.send(mcpPost(mcp, READER, session, call), HttpResponse.BodyHandlers.ofString());
        assertThat(hijackCall.statusCode()).isIn(400, 404);
        assertThat(live.audit(null, AuditRecord.REQUEST)).noneMatch(r -> r.actor().startsWith("reader@") && r.detail().contains("run_code"));
    }

    private static java.net.http.HttpRequest mcpPost(java.net.URI mcp, String token, String session, String body) {
        java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(mcp)
                .header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (session != null) {
            b.header("Mcp-Session-Id", session);
        }
        return b.build();
    }

    /** {@link McpNode#client}, for a future: its checked exceptions as unchecked. */
    private static JsonNode client(Map<String, String> env, String... scenarios) {
        try {
            return McpNode.client(env, scenarios);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static Map<String, String> with(Map<String, String> env, String token) {
        Map<String, String> m = new java.util.HashMap<>(env);
        m.put("MCP_TOKEN", token);
        return m;
    }
}
