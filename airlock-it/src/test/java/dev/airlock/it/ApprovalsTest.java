package dev.airlock.it;

import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The approval gate against a real server: an action a profile marks waits for a person, who
 * approves or denies it over REST, the CLI, or (for an MCP client that supports it) elicitation;
 * no answer in time is a deny. Every step is on the audit log, with who decided.
 */
class ApprovalsTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String OPERATOR = "alk_operator-token-0123456789abcdef012345678";
    private static final String MCP_AGENT = "alk_mcp-agent-token-0123456789abcdef01234567";
    private static LiveServer live;

    @BeforeAll
    static void start() {
        live = LiveServer.withPolicy("""
                approvals: {timeoutSeconds: 4}
                profiles:
                  default: {}
                  big:
                    limits: {memory: 1g}
                    approvals: [create]
                  net:
                    network:
                      allow: [{host: test.example}]
                      ranges: [127.0.0.0/8]
                      hosts: {test.example: [127.0.0.1]}
                    approvals: [network]
                  watched:
                    approvals: [exec]
                  pay:
                    network:
                      allow: [{host: test.example}]
                      ranges: [127.0.0.0/8]
                      hosts: {test.example: [127.0.0.1]}
                    approveRequests: [{host: test.example, methods: [POST, DELETE]}]
                clients:
                  local: {tokenFile: token, profiles: [default, big, net, watched, pay], allow: ["*"]}
                  operator: {tokenSha256: %s, profiles: [default], allow: [approvals]}
                  mcp-agent: {tokenSha256: %s, profiles: [big], allow: [sandbox.create, sandbox.destroy, sandbox.read]}
                """.formatted(HexFormat.of().formatHex(Policy.sha256(OPERATOR)), HexFormat.of().formatHex(Policy.sha256(MCP_AGENT))),
                c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static CompletableFuture<HttpResponse<String>> async(String method, String path, String body) {
        return CompletableFuture.supplyAsync(() -> live.raw(method, path, body));
    }

    /** The one approval pending, as the operator sees it. */
    private static JsonNode pending() {
        JsonNode[] found = new JsonNode[1];
        await().atMost(Duration.ofSeconds(10)).until(() -> {
            HttpResponse<String> r = live.raw("GET", "/v1/approvals", null, OPERATOR);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            JsonNode list = JSON.readTree(r.body()).path("approvals");
            found[0] = list.isEmpty() ? null : list.get(0);
            return list.size() == 1;
        });
        return found[0];
    }

    private static void destroy(HttpResponse<String> created) {
        live.raw("DELETE", "/v1/sandboxes/" + JSON.readTree(created.body()).path("id").asString(), null);
    }

    @Test
    void anApprovedCreateGoesAheadAndTheDecisionIsRecorded() throws Exception {
        CompletableFuture<HttpResponse<String>> create = async("POST", "/v1/sandboxes", "{\"profile\": \"big\"}");
        JsonNode a = pending();
        assertThat(a.path("state").asString()).isEqualTo("pending");
        assertThat(a.path("client").asString()).isEqualTo("local");
        assertThat(a.path("action").asString()).isEqualTo("create");
        assertThat(a.path("rule").asString()).startsWith("profiles.big.approvals");
        assertThat(a.path("summary").asString()).contains("profile 'big'", "memory 1g");
        assertThat(create).isNotDone();
        // the client that asked may not decide its own approval
        HttpResponse<String> self = live.raw("POST", "/v1/approvals/" + a.path("id").asString() + "/approve", "{}");
        assertThat(self.statusCode()).as(self.body()).isEqualTo(403);
        assertThat(self.body()).contains("separation of duties");
        HttpResponse<String> decided = live.raw("POST", "/v1/approvals/" + a.path("id").asString() + "/approve", "{\"reason\": \"looks fine\"}", OPERATOR);
        assertThat(decided.statusCode()).as(decided.body()).isEqualTo(200);
        assertThat(JSON.readTree(decided.body()).path("decidedBy").asString()).isEqualTo("rest:operator");
        HttpResponse<String> created = create.get();
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        destroy(created);
        // deciding twice is a conflict
        assertThat(live.raw("POST", "/v1/approvals/" + a.path("id").asString() + "/deny", "{}", OPERATOR).statusCode()).isEqualTo(409);
        List<AuditRecord> records = live.audit(null, AuditRecord.APPROVAL).stream()
                .filter(r -> r.detail().contains(a.path("id").asString())).toList();
        assertThat(records).extracting(r -> JSON.readTree(r.detail()).path("event").asString()).containsExactly("requested", "approved");
        assertThat(records.getFirst().actor()).isEqualTo("local@rest");
        assertThat(records.getLast().actor()).isEqualTo("rest:operator");
        assertThat(records.getLast().detail()).contains("looks fine");
        // the request, the wait and the decision are one story on the chain, and the chain holds
        List<AuditRecord> all = live.audit(null, null);
        int requested = all.indexOf(records.getFirst());
        int approved = all.indexOf(records.getLast());
        assertThat(all.subList(0, requested)).anySatisfy(r -> assertThat(r.detail()).contains("\"endpoint\":\"POST /v1/sandboxes\""));
        assertThat(all.subList(approved, all.size())).anySatisfy(r -> assertThat(r.detail()).contains("\"event\":\"created\"", "\"profile\":\"big\""));
        try (dev.airlock.server.audit.AuditReader reader = dev.airlock.server.audit.AuditReader.open(live.dataDir.resolve("airlock.db"))) {
            dev.airlock.server.audit.AuditReader.Verdict v = reader.verify();
            assertThat(v.ok()).as(v.problem()).isTrue();
        }
    }

    @Test
    void aDeniedCreateIsRefusedNamingWhoDenied() throws Exception {
        CompletableFuture<HttpResponse<String>> create = async("POST", "/v1/sandboxes", "{\"profile\": \"big\"}");
        JsonNode a = pending();
        live.raw("POST", "/v1/approvals/" + a.path("id").asString() + "/deny", "{\"reason\": \"too big\"}", OPERATOR);
        HttpResponse<String> refused = create.get();
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(403);
        assertThat(refused.body()).contains("denied by rest:operator", "too big", a.path("id").asString());
    }

    @Test
    void noAnswerInTimeIsADeny() throws Exception {
        HttpResponse<String> refused = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"big\"}");
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(403);
        assertThat(refused.body()).contains("nobody approved it within 4 s");
        assertThat(live.audit(null, AuditRecord.APPROVAL)).anySatisfy(r -> {
            assertThat(r.actor()).isEqualTo("timeout");
            assertThat(r.detail()).contains("\"event\":\"timed_out\"");
        });
        assertThat(JSON.readTree(live.raw("GET", "/v1/approvals", null, OPERATOR).body()).path("approvals").size()).isZero();
    }

    @Test
    void networkBeyondTheProfileWaitsForApprovalWithinItDoesNot() throws Exception {
        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"net\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).path("id").asString();
        try {
            CompletableFuture<HttpResponse<String>> update = async("PUT", "/v1/sandboxes/" + id + "/network",
                    "{\"allow\": [{\"host\": \"test.example\"}, {\"host\": \"pypi.org\", \"ports\": [443]}]}");
            JsonNode a = pending();
            assertThat(a.path("action").asString()).isEqualTo("network");
            assertThat(a.path("sandbox").asString()).isEqualTo(id);
            assertThat(a.path("summary").asString()).contains("destination pypi.org:443").doesNotContain("test.example");
            live.raw("POST", "/v1/approvals/" + a.path("id").asString() + "/approve", "{}", OPERATOR);
            HttpResponse<String> updated = update.get();
            assertThat(updated.statusCode()).as(updated.body()).isEqualTo(200);
            assertThat(updated.body()).contains("pypi.org");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    @Test
    void anExecutionOfAWatchedProfileWaitsAndOnlyItsDigestIsRecorded() throws Exception {
        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"watched\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).path("id").asString();
        try {
            String marker = "WATCHED-" + System.nanoTime();
            CompletableFuture<HttpResponse<String>> exec = async("POST", "/v1/sandboxes/" + id + "/exec",
                    "{\"command\": [\"echo\", \"" + marker + "\"]}");
            JsonNode a = pending();
            assertThat(a.path("action").asString()).isEqualTo("exec");
            assertThat(a.path("summary").asString()).contains("echo " + marker);
            live.raw("POST", "/v1/approvals/" + a.path("id").asString() + "/approve", "{}", OPERATOR);
            assertThat(JSON.readTree(exec.get().body()).path("stdout").asString()).isEqualTo(marker + "\n");
            List<AuditRecord> records = live.audit(id, AuditRecord.APPROVAL);
            assertThat(records).hasSize(2).allSatisfy(r -> assertThat(r.detail()).doesNotContain(marker).contains("summaryDigest"));
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    @Test
    void anIrreversibleRequestWaitsInTheProxyAndNothingReachesTheHostUntilApproved() throws Exception {
        java.util.List<String> received = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
        com.sun.net.httpserver.HttpServer origin = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 10);
        origin.createContext("/", ex -> {
            received.add(ex.getRequestMethod() + " " + ex.getRequestURI());
            ex.getRequestBody().readAllBytes();
            byte[] body = "charged".getBytes();
            ex.sendResponseHeaders(200, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        origin.start();
        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"pay\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).path("id").asString();
        String url = "http://test.example:" + origin.getAddress().getPort();
        try {
            String get = live.raw("POST", "/v1/sandboxes/" + id + "/exec", request(url + "/balance", "GET")).body();
            assertThat(JSON.readTree(get).path("stdout").asString()).as(get).startsWith("200");
            assertThat(received).containsExactly("GET /balance");

            CompletableFuture<HttpResponse<String>> charge = async("POST", "/v1/sandboxes/" + id + "/exec", request(url + "/charge?amount=5", "POST"));
            JsonNode a = pending();
            assertThat(a.path("action").asString()).isEqualTo("request");
            assertThat(a.path("sandbox").asString()).isEqualTo(id);
            assertThat(a.path("summary").asString()).contains("POST test.example:" + origin.getAddress().getPort() + "/charge?amount=5");
            assertThat(received).as("nothing reaches the host before the decision").containsExactly("GET /balance");
            live.raw("POST", "/v1/approvals/" + a.path("id").asString() + "/approve", "{}", OPERATOR);
            assertThat(JSON.readTree(charge.get().body()).path("stdout").asString()).startsWith("200 charged");
            assertThat(received).containsExactly("GET /balance", "POST /charge?amount=5");

            CompletableFuture<HttpResponse<String>> refund = async("POST", "/v1/sandboxes/" + id + "/exec", request(url + "/refund", "delete"));
            live.raw("POST", "/v1/approvals/" + pending().path("id").asString() + "/deny", "{}", OPERATOR);
            assertThat(JSON.readTree(refund.get().body()).path("stdout").asString()).startsWith("403");
            assertThat(received).containsExactly("GET /balance", "POST /charge?amount=5");

            JsonNode egress = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id + "/egress", null).body()).path("records");
            assertThat(egress.valueStream().map(r -> r.path("approval").asString(""))).contains("approved", "denied");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
            origin.stop(0);
        }
    }

    /** An exec body: python3 sends {@code method} to {@code url} through the sandbox's proxy and prints the status and body. */
    private static String request(String url, String method) {
        String code = "import urllib.request, urllib.error\n"
                + "r = urllib.request.Request('" + url + "', data=(b'x' if '" + method + "' != 'GET' else None), method='" + method + "')\n"
                + "try:\n    res = urllib.request.urlopen(r, timeout=25)\n    print(res.status, res.read().decode())\n"
                + "except urllib.error.HTTPError as e:\n    print(e.code)\n";
        return JSON.createObjectNode().put("language", "python").put("code", code).put("timeoutSeconds", 30).toString();
    }

    @Test
    void theCliListsAndApproves() throws Exception {
        Path tokenFile = Files.createTempFile("operator", ".token", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(tokenFile, OPERATOR);
        try {
            CompletableFuture<HttpResponse<String>> create = async("POST", "/v1/sandboxes", "{\"profile\": \"big\"}");
            String id = pending().path("id").asString();
            String[] connection = {"--url", live.uri().toString(), "--token-file", tokenFile.toString()};
            InProcessCli list = InProcessCli.run("approvals", "list", connection[0], connection[1], connection[2], connection[3]);
            assertThat(list.exit()).isZero();
            assertThat(list.out()).contains(id, "profile 'big'", "client local");
            InProcessCli approve = InProcessCli.run("approvals", "approve", id, "--reason", "ok by ops", connection[0], connection[1], connection[2], connection[3]);
            assertThat(approve.exit()).as(approve.err()).isZero();
            assertThat(approve.out()).contains(id + ": approved by rest:operator (cli:");
            HttpResponse<String> created = create.get();
            assertThat(created.statusCode()).isEqualTo(201);
            destroy(created);
            InProcessCli again = InProcessCli.run("approvals", "deny", id, connection[0], connection[1], connection[2], connection[3]);
            assertThat(again.exit()).isEqualTo(2);
            assertThat(again.err()).contains("already decided");
        } finally {
            Files.delete(tokenFile);
        }
    }

    @Test
    void anMcpClientIsAskedThroughElicitation() throws Exception {
        Map<String, String> env = Map.of("MCP_TRANSPORT", "http", "MCP_URL", live.uri() + "/mcp", "MCP_TOKEN", MCP_AGENT,
                "MCP_ELICIT", "accept");
        JsonNode accepted = McpNode.client(env, "approvedCreate").path("approvedCreate");
        assertThat(accepted.path("result").path("isError").asBoolean()).as(accepted.toString()).isFalse();
        assertThat(accepted.path("elicitations")).hasSize(1);
        assertThat(accepted.path("elicitations").get(0).path("message").asString()).contains("profile 'big'", "profiles.big.approvals");
        assertThat(accepted.path("elicitations").get(0).path("schema").path("properties").has("approve")).isTrue();

        JsonNode refused = McpNode.client(with(env, "MCP_ELICIT", "refuse"), "approvedCreate").path("approvedCreate");
        assertThat(refused.path("result").path("isError").asBoolean()).isTrue();
        assertThat(refused.toString()).contains("denied by mcp-elicitation:mcp-agent");

        JsonNode declined = McpNode.client(with(env, "MCP_ELICIT", "decline"), "approvedCreate").path("approvedCreate");
        assertThat(declined.toString()).contains("denied by mcp-elicitation:mcp-agent");

        // a person who never answers: the timeout denies
        JsonNode silent = McpNode.client(with(env, "MCP_ELICIT", "silent"), "approvedCreate").path("approvedCreate");
        assertThat(silent.toString()).contains("nobody approved it within 4 s");

        List<AuditRecord> decisions = live.audit(null, AuditRecord.APPROVAL).stream()
                .filter(r -> r.detail().contains("\"client\":\"mcp-agent\"") && !r.detail().contains("\"event\":\"requested\"")).toList();
        assertThat(decisions).extracting(r -> JSON.readTree(r.detail()).path("event").asString())
                .containsExactly("approved", "denied", "denied", "timed_out");
        assertThat(decisions.getFirst().actor()).isEqualTo("mcp-elicitation:mcp-agent");
    }

    @Test
    void withElicitationOffAnMcpClientWhoWouldApproveIsNeverAsked() throws Exception {
        try (LiveServer off = LiveServer.withPolicy("""
                approvals: {timeoutSeconds: 2, elicitation: false}
                profiles:
                  default: {}
                  big: {approvals: [create]}
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
                  mcp-agent: {tokenSha256: %s, profiles: [big], allow: [sandbox.create, sandbox.destroy]}
                """.formatted(HexFormat.of().formatHex(Policy.sha256(MCP_AGENT))), c -> c.withPoolSize(0))) {
            JsonNode r = McpNode.client(Map.of("MCP_TRANSPORT", "http", "MCP_URL", off.uri() + "/mcp", "MCP_TOKEN", MCP_AGENT,
                    "MCP_ELICIT", "accept"), "approvedCreate").path("approvedCreate");
            assertThat(r.path("elicitations")).as(r.toString()).isEmpty();
            assertThat(r.path("result").path("isError").asBoolean()).isTrue();
            assertThat(r.toString()).contains("nobody approved it within 2 s");
        }
    }

    private static Map<String, String> with(Map<String, String> env, String key, String value) {
        Map<String, String> m = new java.util.HashMap<>(env);
        m.put(key, value);
        return m;
    }
}
