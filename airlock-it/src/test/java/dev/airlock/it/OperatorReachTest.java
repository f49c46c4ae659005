package dev.airlock.it;

import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code sandbox.any} operation against a real server: an operator granted it lists, looks at
 * and destroys an agent's sandbox, but neither runs anything in it nor reads what its programs
 * wrote; the agent still cannot see the operator's sandbox; a client without it still finds
 * others' sandboxes missing; the audit log names the operator as who acted.
 */
class OperatorReachTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String OPERATOR = "alk_reach-operator-token-0123456789abcdef01";
    private static final String AGENT = "alk_reach-agent-token-0123456789abcdef012345";
    private static final String READER = "alk_reach-reader-token-0123456789abcdef01234";
    private static LiveServer live;

    private static String hash(String token) {
        return HexFormat.of().formatHex(Policy.sha256(token));
    }

    @BeforeAll
    static void start() {
        live = LiveServer.withPolicy("""
                profiles:
                  default: {maxLifetimeSeconds: 3600}
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
                  operator:
                    tokenSha256: %s
                    profiles: [default]
                    allow: [sandbox.create, sandbox.read, sandbox.destroy, sandbox.extend, files.read, exec, audit, sandbox.any]
                  agent: {tokenSha256: %s, profiles: [default], allow: [sandbox.create, sandbox.read, sandbox.destroy, exec, files.read, files.write]}
                  reader: {tokenSha256: %s, profiles: [default], allow: [sandbox.read, sandbox.destroy, files.read]}
                """.formatted(hash(OPERATOR), hash(AGENT), hash(READER)), c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static JsonNode ok(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return r.body().isEmpty() ? null : JSON.readTree(r.body());
    }

    private static void notFound(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(404);
        assertThat(JSON.readTree(r.body()).path("error").path("code").asString()).isEqualTo("not_found");
    }

    private static String create(String token, String body) {
        return ok(live.raw("POST", "/v1/sandboxes", body, token), 201).path("id").asString();
    }

    @Test
    void anOperatorSeesExtendsAndDestroysAnAgentsSandboxButDoesNotReachIntoIt() {
        String id = create(AGENT, "{\"labels\": {\"team\": \"agents\"}, \"env\": {\"API_KEY\": \"s3cret\"}}");
        String mine = create(OPERATOR, "{}");
        try {
            String sb = "/v1/sandboxes/" + id;
            ok(live.raw("PUT", sb + "/files?path=/workspace/notes.txt", "private words", AGENT), 201);
            String pid = ok(live.raw("POST", sb + "/exec", "{\"command\": [\"sh\", \"-c\", \"echo private output; sleep 60\"], \"background\": true}",
                    AGENT), 202).path("id").asString();

            // what it may: the list, the sandbox, its processes, egress and file names, extend
            JsonNode listed = ok(live.raw("GET", "/v1/sandboxes", null, OPERATOR), 200).path("sandboxes");
            assertThat(listed.findValuesAsString("id")).contains(id, mine);
            JsonNode described = ok(live.raw("GET", sb, null, OPERATOR), 200);
            assertThat(described.path("owner").asString()).isEqualTo("agent");
            assertThat(described.path("env").path("API_KEY").asString()).as("an env value is its owner's").doesNotContain("s3cret");
            assertThat(ok(live.raw("GET", sb, null, AGENT), 200).path("env").path("API_KEY").asString()).isEqualTo("s3cret");
            assertThat(ok(live.raw("GET", sb + "/processes", null, OPERATOR), 200).path("processes").findValuesAsString("id")).contains(pid);
            ok(live.raw("GET", sb + "/egress", null, OPERATOR), 200);
            assertThat(ok(live.raw("GET", sb + "/files/list?path=/workspace", null, OPERATOR), 200).toString()).contains("notes.txt");
            ok(live.raw("GET", sb + "/files/stat?path=/workspace/notes.txt", null, OPERATOR), 200);
            ok(live.raw("POST", sb + "/ttl", "{\"ttlSeconds\": 1800}", OPERATOR), 200);

            // what it may not: run anything there, read a file's contents or a process's output
            notFound(live.raw("POST", sb + "/exec", "{\"command\": [\"true\"]}", OPERATOR));
            notFound(live.raw("GET", sb + "/files?path=/workspace/notes.txt", null, OPERATOR));
            notFound(live.raw("GET", sb + "/processes/" + pid + "/stdout", null, OPERATOR));
            notFound(live.raw("GET", sb + "/processes/" + pid, null, OPERATOR));
            notFound(live.raw("POST", sb + "/processes/" + pid + "/signal", "{\"signal\": 15}", OPERATOR));
            HttpResponse<String> own = live.raw("GET", sb + "/processes/" + pid + "/stdout", null, AGENT);
            assertThat(own.statusCode()).as(own.body()).isEqualTo(200);

            // the agent does not see the operator's sandbox; a client without sandbox.any sees neither
            assertThat(ok(live.raw("GET", "/v1/sandboxes", null, AGENT), 200).path("sandboxes").findValuesAsString("id")).containsExactly(id);
            notFound(live.raw("GET", "/v1/sandboxes/" + mine, null, AGENT));
            notFound(live.raw("DELETE", "/v1/sandboxes/" + mine, null, AGENT));
            assertThat(ok(live.raw("GET", "/v1/sandboxes", null, READER), 200).path("sandboxes")).isEmpty();
            notFound(live.raw("GET", sb, null, READER));
            notFound(live.raw("GET", sb + "/files/list?path=/workspace", null, READER));
            notFound(live.raw("DELETE", sb, null, READER));
            // nor does "*": the built-in style local client must name sandbox.any to reach others'
            notFound(live.raw("GET", sb, null, live.token()));

            // the operator destroys it; the log says who
            ok(live.raw("DELETE", sb, null, OPERATOR), 204);
            notFound(live.raw("GET", sb, null, AGENT));
            assertThat(live.audit(id, "lifecycle")).anySatisfy(r -> {
                assertThat(r.actor()).isEqualTo("operator@rest");
                assertThat(r.detail()).contains("\"event\":\"destroyed\"");
            });
            assertThat(live.audit(id, "lifecycle")).anySatisfy(r -> {
                assertThat(r.actor()).isEqualTo("operator@rest");
                assertThat(r.detail()).contains("extended");
            });
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null, AGENT);
            live.raw("DELETE", "/v1/sandboxes/" + mine, null, OPERATOR);
        }
    }

    @Test
    void overMcpTooTheOperatorListsAndDestroysAnAgentsSandbox() {
        String id = create(AGENT, "{}");
        String mine = create(OPERATOR, "{}");
        try {
            RawMcp operator = new RawMcp(live.uri(), OPERATOR);
            String session = operator.open();
            assertThat(operator.call(session, 2, "sandbox_list", "{}").path("result").toString()).contains(id, mine);
            RawMcp agent = new RawMcp(live.uri(), AGENT);
            String agentSession = agent.open();
            assertThat(agent.call(agentSession, 2, "sandbox_list", "{}").path("result").toString()).contains(id).doesNotContain(mine);
            JsonNode destroyed = operator.call(session, 3, "sandbox_destroy", "{\"sandboxId\": \"" + id + "\"}");
            assertThat(destroyed.path("result").path("isError").asBoolean()).as(destroyed.toString()).isFalse();
            notFound(live.raw("GET", "/v1/sandboxes/" + id, null, AGENT));
            assertThat(live.audit(id, "lifecycle")).anySatisfy(r -> assertThat(r.actor()).startsWith("operator@mcp-http"));
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null, AGENT);
            live.raw("DELETE", "/v1/sandboxes/" + mine, null, OPERATOR);
        }
    }
}
