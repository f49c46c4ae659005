package dev.airlock.it;

import dev.airlock.server.audit.AuditRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Floods an outsider or a sandbox can aim at the audit log: a client without a token hammering
 * the server, and sandboxed code trying thousands of refused connections. Each adds a constant
 * number of records per window (the first refusal in full, the rest as one count), not one per
 * attempt; the counts add up; the chain verifies; /health keeps answering throughout ({@link HealthWatch}).
 */
class AuditFloodTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.withPolicy(LiveServer.NET_POLICY, c -> c.withPoolSize(1));
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    private static List<AuditRecord> all(String kind) {
        return live.audit(null, kind);
    }

    private static JsonNode detail(AuditRecord r) {
        return JSON.readTree(r.detail());
    }

    private static void closeWindows() throws InterruptedException {
        assertThat(live.server.audit().closeWindowsAndPrune(10_000)).isTrue();
    }

    @Test
    void aClientWithoutATokenHammeringAddsAConstantNumberOfRecordsNotOnePerRequest() throws Exception {
        closeWindows();
        int before = all(null).size();
        int perThread = 500;
        int threads = 8; // 4000 requests: half REST, half MCP; half without a token, half with a wrong one
        AtomicInteger refused = new AtomicInteger();
        RawMcp noToken = new RawMcp(live.uri(), null);
        RawMcp wrongToken = new RawMcp(live.uri(), "not-the-token");
        try (HealthWatch health = new HealthWatch(live.uri()); ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int n = t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < perThread; i++) {
                        HttpResponse<String> r = switch (n % 4) {
                            case 0 -> live.raw("GET", "/v1/sandboxes/al-" + i, null, null);
                            case 1 -> live.raw("POST", "/v1/sandboxes", "{}", "wrong-" + i);
                            case 2 -> noToken.post(null, RawMcp.INITIALIZE);
                            default -> wrongToken.post("s-" + i, RawMcp.INITIALIZE);
                        };
                        if (r.statusCode() == 401) {
                            refused.incrementAndGet();
                        }
                    }
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
            health.assertKeptAnswering();
        }
        assertThat(refused).hasValue(threads * perThread);
        int during = all(null).size() - before;
        // 4 sources (REST, MCP) x (missing, wrong): a request and a deny each; a window may roll over once
        assertThat(during).as("records added by %d refused requests", threads * perThread).isLessThanOrEqualTo(16);

        closeWindows();
        List<AuditRecord> denies = all(AuditRecord.AUTHORIZATION).stream()
                .filter(r -> detail(r).path("rule").asString().equals("token")).toList();
        long firsts = denies.stream().filter(r -> detail(r).path("aggregated").isMissingNode()).count();
        long repeats = denies.stream().mapToLong(r -> detail(r).path("aggregated").path("repeats").asLong()).sum();
        assertThat(firsts + repeats).as("every refusal is accounted for, in full or in a count").isEqualTo(threads * perThread);
        assertThat(denies).allSatisfy(r -> assertThat(r.sandbox()).isNull());
        assertThat(denies).anySatisfy(r -> assertThat(detail(r).path("aggregated").path("samples").toString()).contains("POST /mcp"));
        assertThat(live.server.audit().droppedSinceLastCount()).isZero();
        verifyChain();
    }

    @Test
    void aSandboxFloodingRefusedEgressAddsAConstantNumberOfRecords() throws Exception {
        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"net\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).get("id").asString();
        int attempts = 2000;
        // Straight to the proxy port, as hostile code would: CONNECT to names no rule allows, as fast as it can.
        String flood = """
                import socket, sys
                refused, other = 0, {}
                for i in range(%d):
                    s = socket.create_connection(("127.0.0.1", 3128))
                    s.sendall(b"CONNECT d%%d.blocked.example:443 HTTP/1.1\\r\\nHost: d%%d.blocked.example:443\\r\\n\\r\\n" %% (i %% 50, i %% 50))
                    answer = s.recv(64)
                    if answer.startswith(b"HTTP/1.1 403"):
                        refused += 1
                    else:
                        other[answer[:40]] = other.get(answer[:40], 0) + 1
                    s.close()
                print(refused)
                print(other, file=sys.stderr)
                """.formatted(attempts);
        try (HealthWatch health = new HealthWatch(live.uri())) {
            HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                    JSON.writeValueAsString(java.util.Map.of("language", "python", "code", flood, "timeoutSeconds", 30)));
            JsonNode result = JSON.readTree(r.body());
            assertThat(result.path("stdout").asString().trim()).as(r.body()).isEqualTo(Integer.toString(attempts));
            health.assertKeptAnswering();
        }
        await(() -> !live.audit(id, AuditRecord.EGRESS).isEmpty());
        List<AuditRecord> during = live.audit(id, AuditRecord.EGRESS);
        assertThat(during).as("egress records of %d refused connections", attempts).hasSizeLessThanOrEqualTo(3);

        closeWindows();
        List<AuditRecord> egress = live.audit(id, AuditRecord.EGRESS);
        assertThat(egress).allSatisfy(e -> assertThat(detail(e).path("decision").asString()).isEqualTo("deny"));
        long firsts = egress.stream().filter(e -> detail(e).path("aggregated").isMissingNode()).count();
        long repeats = egress.stream().mapToLong(e -> detail(e).path("aggregated").path("repeats").asLong()).sum();
        assertThat(firsts + repeats).isEqualTo(attempts);
        assertThat(egress.getLast().detail()).contains("blocked.example:443");
        live.raw("DELETE", "/v1/sandboxes/" + id, null);
        verifyChain();
    }

    private static void await(java.util.concurrent.Callable<Boolean> condition) {
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).until(condition);
    }

    private static void verifyChain() {
        try (dev.airlock.server.audit.AuditReader reader = dev.airlock.server.audit.AuditReader.open(live.dataDir.resolve("airlock.db"))) {
            dev.airlock.server.audit.AuditReader.Verdict v = reader.verify();
            assertThat(v.ok()).as(v.problem()).isTrue();
        }
    }
}
