package dev.airlock.it;

import dev.airlock.cli.CliProcess;
import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.Language;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.audit.AuditRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Predicate;

import com.sun.net.httpserver.HttpServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The audit log of a real server: what a session through the SDK, a refused request, a refused
 * egress and an MCP tool call leave in it; that arguments are only digested; and that
 * {@code airlock audit verify}, a real CLI process, finds a changed or deleted record.
 */
class AuditLogTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.withPolicy(LiveServer.NET_POLICY, c -> c.withPoolSize(1));
    }

    @AfterAll
    static void closeServer() {
        if (live != null) {
            live.close();
        }
    }

    private static Path db() {
        return live.dataDir.resolve("airlock.db");
    }

    private static void flush() throws InterruptedException {
        assertThat(live.server.audit().flush(10_000)).as("audit writer caught up").isTrue();
    }

    private static List<AuditRecord> records(String sandbox, String kind) throws InterruptedException {
        flush();
        try (AuditReader reader = AuditReader.open(db())) {
            return reader.query(new AuditReader.Query(sandbox, kind, null, 0));
        }
    }

    private static JsonNode detail(AuditRecord r) {
        return JSON.readTree(r.detail());
    }

    /** Index of the first record at or after {@code from} that matches, failing if none does. */
    private static int find(List<AuditRecord> rs, int from, String what, Predicate<AuditRecord> p) {
        for (int i = from; i < rs.size(); i++) {
            if (p.test(rs.get(i))) {
                return i;
            }
        }
        throw new AssertionError("no " + what + " after index " + from + " in:\n" + String.join("\n", rs.stream().map(AuditRecord::toJsonLine).toList()));
    }

    private static Predicate<AuditRecord> kind(String kind, String field, String value) {
        return r -> r.kind().equals(kind) && (field == null || value.equals(detail(r).path(field).asString()));
    }

    @Test
    void aScriptedSdkSessionLeavesItsRecordsInOrderOnAValidChain() throws Exception {
        String id;
        try (RemoteSandbox s = live.client.create()) {
            id = s.id();
            s.files().write("/workspace/data.txt", "one\ntwo\n".getBytes(StandardCharsets.UTF_8));
            ExecResult r = s.run(Language.PYTHON, "print(len(open('/workspace/data.txt').read().split()))");
            assertThat(r.stdout()).isEqualTo("2\n");
            BackgroundProcess p = s.start(Exec.command("sh", "-c", "echo background"));
            assertThat(p.waitFor(Duration.ofSeconds(30))).isPresent();
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> records(id, AuditRecord.RESULT).size() >= 2);
        List<AuditRecord> rs = records(id, null);
        assertThat(rs).allSatisfy(r -> assertThat(r.sandbox()).isEqualTo(id));

        int i = find(rs, 0, "created", kind(AuditRecord.LIFECYCLE, "event", "created"));
        i = find(rs, i + 1, "file request", kind(AuditRecord.REQUEST, "endpoint", "PUT /v1/sandboxes/{id}/files"));
        assertThat(rs.get(i).actor()).isEqualTo("local@rest");
        assertThat(detail(rs.get(i)).path("operation").asString()).isEqualTo("files.write");
        assertThat(rs.get(i + 1).kind()).isEqualTo(AuditRecord.AUTHORIZATION);
        assertThat(detail(rs.get(i + 1)).path("decision").asString()).isEqualTo("allow");
        assertThat(detail(rs.get(i + 1)).path("rule").asString()).isEqualTo("clients.local.allow grants files.write");
        i = find(rs, i + 2, "file write", kind(AuditRecord.FILE, "operation", "write"));
        assertThat(detail(rs.get(i)).path("bytes").asLong()).isEqualTo(8);
        assertThat(detail(rs.get(i)).path("pathDigest").asString()).startsWith("sha256:");
        i = find(rs, i + 1, "exec request", kind(AuditRecord.REQUEST, "endpoint", "POST /v1/sandboxes/{id}/exec"));
        i = find(rs, i + 1, "execution", kind(AuditRecord.EXECUTION, null, null));
        assertThat(detail(rs.get(i)).path("commandDigest").asString()).startsWith("sha256:");
        assertThat(detail(rs.get(i)).path("limits").path("memoryBytes").asLong()).isPositive();
        i = find(rs, i + 1, "result", kind(AuditRecord.RESULT, "endReason", "exited"));
        assertThat(detail(rs.get(i)).path("exitCode").asInt()).isZero();
        assertThat(detail(rs.get(i)).path("stdoutBytes").asLong()).isEqualTo(2);
        i = find(rs, i + 1, "background execution", r -> r.kind().equals(AuditRecord.EXECUTION) && detail(r).path("background").asBoolean());
        String process = detail(rs.get(i)).path("process").asString();
        find(rs, i + 1, "background result", r -> r.kind().equals(AuditRecord.RESULT) && process.equals(detail(r).path("process").asString()));
        int destroyRequest = find(rs, i + 1, "destroy request", kind(AuditRecord.REQUEST, "endpoint", "DELETE /v1/sandboxes/{id}"));
        find(rs, destroyRequest + 1, "destroyed", kind(AuditRecord.LIFECYCLE, "event", "destroyed"));

        // all of these are on the chain, and the whole chain holds
        try (AuditReader reader = AuditReader.open(db())) {
            AuditReader.Verdict v = reader.verify();
            assertThat(v.ok()).as(v.problem()).isTrue();
            assertThat(v.records()).isGreaterThanOrEqualTo(rs.size());
        }
    }


    @Test
    void aKillAndASignalThroughRestAreRecordedUnderTheClientThatSentThem() throws Exception {
        String id;
        try (RemoteSandbox s = live.client.create()) {
            id = s.id();
            BackgroundProcess term = s.start(Exec.command("sleep", "300"));
            term.signal(15);
            assertThat(term.waitFor(Duration.ofSeconds(30))).isPresent();
            BackgroundProcess kill = s.start(Exec.command("sleep", "300"));
            kill.kill();
            assertThat(kill.waitFor(Duration.ofSeconds(30))).isPresent();
            List<AuditRecord> signals = records(id, AuditRecord.SIGNAL);
            assertThat(signals).hasSize(2);
            assertThat(signals).allSatisfy(r -> assertThat(r.actor()).isEqualTo("local@rest"));
            assertThat(detail(signals.get(0)).path("process").asString()).isEqualTo(term.id());
            assertThat(detail(signals.get(0)).path("signal").asInt()).isEqualTo(15);
            assertThat(detail(signals.get(1)).path("process").asString()).isEqualTo(kill.id());
            assertThat(detail(signals.get(1)).path("signal").asInt()).isEqualTo(9);
            // each came after its own granted request: DELETE for the kill, POST .../signal for the signal
            List<AuditRecord> rs = records(id, null);
            int post = find(rs, 0, "signal request", kind(AuditRecord.REQUEST, "endpoint", "POST /v1/sandboxes/{id}/processes/{pid}/signal"));
            int sent = find(rs, post + 1, "signal record", kind(AuditRecord.SIGNAL, "process", term.id()));
            int delete = find(rs, sent + 1, "kill request", kind(AuditRecord.REQUEST, "endpoint", "DELETE /v1/sandboxes/{id}/processes/{pid}"));
            find(rs, delete + 1, "kill record", kind(AuditRecord.SIGNAL, "process", kill.id()));
        }
    }
    @Test
    void anExpiredSandboxIsRecordedAsTheServersDoing() throws Exception {
        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 1}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).get("id").asString();
        await().atMost(Duration.ofSeconds(15)).until(() -> records(id, AuditRecord.LIFECYCLE).stream()
                .anyMatch(r -> detail(r).path("event").asString().equals("expired")));
        AuditRecord expired = records(id, AuditRecord.LIFECYCLE).getLast();
        assertThat(expired.actor()).isEqualTo("server");
        assertThat(detail(expired).path("reason").asString()).contains("time-to-live");
    }

    @Test
    void anUnauthenticatedRequestIsRecordedAsADeny() throws Exception {
        assertThat(live.raw("GET", "/v1/sandboxes", null, null).statusCode()).isEqualTo(401);
        assertThat(live.raw("GET", "/v1/sandboxes", null, "not-the-token").statusCode()).isEqualTo(401);
        List<AuditRecord> auth = records(null, AuditRecord.AUTHORIZATION);
        List<AuditRecord> denies = auth.stream().filter(r -> detail(r).path("decision").asString().equals("deny")).toList();
        assertThat(denies).hasSizeGreaterThanOrEqualTo(2);
        AuditRecord last = denies.getLast();
        assertThat(detail(last).path("rule").asString()).isEqualTo("token");
        assertThat(last.actor()).isEqualTo("rest");
        assertThat(last.sandbox()).isNull();
    }

    @Test
    void argumentsAreOnlyDigested() throws Exception {
        String secret = "AUDIT-SECRET-" + UUID.randomUUID();
        try (RemoteSandbox s = live.client.create()) {
            assertThat(s.run(Language.PYTHON, "print('" + secret + "'[:5])").stdout()).isEqualTo("AUDIT\n");
            assertThat(s.exec("sh", "-c", "echo " + secret + " >/dev/null").exitCode()).isZero();
            s.files().write("/workspace/" + secret + ".txt", secret.getBytes(StandardCharsets.UTF_8));
        }
        flush();
        for (String f : List.of("airlock.db", "airlock.db-wal")) {
            Path file = live.dataDir.resolve(f);
            if (Files.exists(file)) {
                assertThat(new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1)).as(f).doesNotContain(secret);
            }
        }
        try (AuditReader reader = AuditReader.open(db())) {
            assertThat(reader.query(new AuditReader.Query(null, null, null, 0)))
                    .noneMatch(r -> r.toJsonLine().contains(secret));
        }
    }

    @Test
    void aRefusedEgressIsRecorded() throws Exception {
        HttpServer origin = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 10);
        origin.createContext("/", ex -> {
            byte[] body = "hello".getBytes();
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        });
        origin.start();
        try {
            int port = origin.getAddress().getPort();
            HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", """
                    {"profile": "net", "network": {"allow": [{"host": "test.example", "ports": [%d]}], "ranges": ["127.0.0.0/8"],
                     "hosts": {"test.example": ["127.0.0.1"], "other.example": "127.0.0.1"}}}""".formatted(port));
            assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
            String id = JSON.readTree(created.body()).get("id").asString();
            try {
                HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                        "{\"command\": [\"python3\", \"-c\", \"import urllib.request, urllib.error, sys\\ntry:\\n print(urllib.request.urlopen(sys.argv[1]).read().decode())\\n"
                                + "except urllib.error.HTTPError as e:\\n print(e.code)\", \"http://other.example:" + port + "/x\"],"
                                + " \"env\": {\"NO_PROXY\": \"\", \"no_proxy\": \"\"}}");
                assertThat(JSON.readTree(r.body()).get("stdout").asString()).startsWith("403");
                await().atMost(Duration.ofSeconds(10)).until(() -> !records(id, AuditRecord.EGRESS).isEmpty());
                AuditRecord e = records(id, AuditRecord.EGRESS).getFirst();
                assertThat(e.actor()).isEqualTo("egress-proxy");
                JsonNode d = detail(e);
                assertThat(d.path("decision").asString()).isEqualTo("deny");
                assertThat(d.path("destination").asString()).isEqualTo("other.example");
                assertThat(d.path("port").asInt()).isEqualTo(port);
                assertThat(d.path("rule").asString()).isEqualTo("default");
            } finally {
                live.raw("DELETE", "/v1/sandboxes/" + id, null);
            }
        } finally {
            origin.stop(0);
        }
    }

    @Test
    void mcpToolCallsAreRecordedWithTheirSession() throws Exception {
        HttpClient http = HttpClient.newHttpClient();
        URI mcp = URI.create(live.uri() + "/mcp");
        HttpResponse<String> init = http.send(mcpPost(mcp, null, """
                {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"audit","version":"1"}}}"""),
                HttpResponse.BodyHandlers.ofString());
        assertThat(init.statusCode()).as(init.body()).isEqualTo(200);
        String session = init.headers().firstValue("Mcp-Session-Id").orElseThrow();
        http.send(mcpPost(mcp, session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"), HttpResponse.BodyHandlers.ofString());
        String secret = "MCP-SECRET-" + UUID.randomUUID();
        HttpResponse<String> call = http.send(mcpPost(mcp, session, """
                {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":"print('%s'[:3])"}}}"""
                .formatted(secret)), HttpResponse.BodyHandlers.ofString());
        assertThat(call.body()).contains("MCP");
        String actor = "local@mcp-http:" + session;
        await().atMost(Duration.ofSeconds(10)).until(() -> records(null, null).stream()
                .anyMatch(r -> r.actor().equals(actor) && r.kind().equals(AuditRecord.LIFECYCLE) && detail(r).path("event").asString().equals("destroyed")));
        List<AuditRecord> mine = records(null, null).stream().filter(r -> r.actor().equals(actor)).toList();
        int i = find(mine, 0, "run_code request", kind(AuditRecord.REQUEST, "endpoint", "run_code"));
        assertThat(detail(mine.get(i)).path("interface").asString()).isEqualTo("mcp-http");
        assertThat(detail(mine.get(i)).path("argsDigest").asString()).startsWith("sha256:");
        assertThat(mine.get(i + 1).kind()).isEqualTo(AuditRecord.AUTHORIZATION);
        i = find(mine, i + 2, "created", kind(AuditRecord.LIFECYCLE, "event", "created"));
        String sandbox = mine.get(i).sandbox();
        i = find(mine, i + 1, "execution", kind(AuditRecord.EXECUTION, null, null));
        i = find(mine, i + 1, "result", kind(AuditRecord.RESULT, "endReason", "exited"));
        i = find(mine, i + 1, "destroyed", kind(AuditRecord.LIFECYCLE, "event", "destroyed"));
        assertThat(mine.get(i).sandbox()).isEqualTo(sandbox);
        assertThat(records(null, null)).noneMatch(r -> r.toJsonLine().contains(secret));

        // an MCP request without the token: a deny
        HttpResponse<String> refused = http.send(HttpRequest.newBuilder(mcp).header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream").POST(HttpRequest.BodyPublishers.ofString("{}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(refused.statusCode()).isEqualTo(401);
        AuditRecord deny = records(null, AuditRecord.AUTHORIZATION).getLast();
        assertThat(detail(deny).path("decision").asString()).isEqualTo("deny");
        assertThat(detail(deny).path("interface").asString()).isEqualTo("mcp-http");
        assertThat(deny.actor()).isEqualTo("mcp-http");
    }

    private static HttpRequest mcpPost(URI mcp, String session, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(mcp)
                .header("Authorization", "Bearer " + live.token())
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (session != null) {
            b.header("Mcp-Session-Id", session).header("MCP-Protocol-Version", "2025-06-18");
        }
        return b.build();
    }

    @Test
    void verifyRunAsTheCliFindsAChangedAndADeletedRecord(@TempDir Path tmp) throws Exception {
        try (RemoteSandbox s = live.client.create()) {
            s.exec("true");
        }
        flush();
        // While the server runs: the live log verifies, and the CLI prints it.
        CliProcess ok = CliProcess.run("audit", "verify", "--data-dir", live.dataDir.toString());
        assertThat(ok.exitCode()).as(ok.stdout() + ok.stderr()).isZero();
        assertThat(ok.stdout()).contains("audit log intact");
        CliProcess listed = CliProcess.run("audit", "--data-dir", live.dataDir.toString(), "--kind", "lifecycle", "--json", "--limit", "3");
        assertThat(listed.exitCode()).as(listed.stderr()).isZero();
        List<String> lines = listed.stdout().lines().toList();
        assertThat(lines).hasSize(3);
        for (String line : lines) {
            assertThat(JSON.readTree(line).path("kind").asString()).isEqualTo("lifecycle");
        }

        long count = records(null, null).size();
        assertThat(count).isGreaterThan(10);
        long target = count / 2;

        Path changed = snapshot(tmp.resolve("changed"));
        sql(changed, "UPDATE audit SET detail = '{\"tampered\":true}' WHERE seq = " + target);
        CliProcess c = CliProcess.run("audit", "verify", "--data-dir", changed.toString());
        assertThat(c.exitCode()).as(c.stdout() + c.stderr()).isEqualTo(1);
        assertThat(c.stdout()).contains("seq " + target).contains("hash differs");

        Path deleted = snapshot(tmp.resolve("deleted"));
        sql(deleted, "DELETE FROM audit WHERE seq = " + target);
        CliProcess d = CliProcess.run("audit", "verify", "--data-dir", deleted.toString());
        assertThat(d.exitCode()).as(d.stdout() + d.stderr()).isEqualTo(1);
        assertThat(d.stdout()).contains("seq " + target).contains("missing");
    }

    /** A consistent copy of the live database, taken while the server writes it. */
    private static Path snapshot(Path dir) throws Exception {
        Files.createDirectories(dir);
        sql(live.dataDir, "VACUUM INTO '" + dir.resolve("airlock.db") + "'");
        return dir;
    }

    private static void sql(Path dataDir, String statement) throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + dataDir.resolve("airlock.db"));
             Statement st = c.createStatement()) {
            st.execute("PRAGMA busy_timeout=5000");
            st.execute(statement);
        }
    }
}
