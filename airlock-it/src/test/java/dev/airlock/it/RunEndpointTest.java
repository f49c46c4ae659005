package dev.airlock.it;

import dev.airlock.client.Airlock;
import dev.airlock.client.EndReason;
import dev.airlock.client.Language;
import dev.airlock.client.Run;
import dev.airlock.client.RunResult;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.HexFormat;
import java.util.List;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code POST /v1/run} against a real server: the one-shot of MCP's {@code run_code} through the
 * REST door and the SDK's {@link Airlock#run(Run)}. The code's files, stdin and outputs travel,
 * the operation {@code run} alone is enough and its absence is refused by the grant control, the
 * sandbox is gone afterwards, and the audit log holds its lifecycle under the REST client.
 */
class RunEndpointTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    /** May only run (and list, to see that nothing is left): every step of a run is covered by {@code run}. */
    private static final String RUNNER = "alk_runner-token-0123456789abcdef012345678";
    /** May do everything a run does, one step at a time, but not {@code run}. */
    private static final String STEPPER = "alk_stepper-token-0123456789abcdef01234567";
    private static LiveServer live;
    private static Airlock runner;

    @BeforeAll
    static void start() {
        live = LiveServer.withPolicy("""
                profiles:
                  default: {}
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
                  runner: {tokenSha256: %s, profiles: [default], allow: [run, sandbox.read]}
                  stepper:
                    tokenSha256: %s
                    profiles: [default]
                    allow: [sandbox.create, sandbox.read, sandbox.destroy, exec, files.read, files.write]
                """.formatted(hash(RUNNER), hash(STEPPER)), c -> c.withPoolSize(0));
        runner = Airlock.connect(live.uri(), RUNNER);
    }

    @AfterAll
    static void stop() {
        try {
            if (runner != null) {
                runner.close();
            }
        } finally {
            if (live != null) {
                live.close(); // fails if any sandbox left anything on the host
            }
        }
    }

    private static String hash(String token) {
        return HexFormat.of().formatHex(Policy.sha256(token));
    }

    @Test
    void theCodeRunsWithItsFilesAndStdinAndItsOutputsComeBack() {
        String code = """
                import os, sys
                print("hello from the run")
                data = open("data/in.txt").read()
                with open("/workspace/output/result.txt", "w") as f:
                    f.write("stdin=" + sys.stdin.read().strip() + " file=" + data)
                with open("/workspace/output/blob.bin", "wb") as f:
                    f.write(bytes(range(256)))
                print("to stderr", file=sys.stderr)
                """;

        RunResult r = runner.run(Run.code(Language.PYTHON, code).file("data/in.txt", "placed\n").stdin("42\n"));

        assertThat(r.endReason()).as(r.stderr()).isEqualTo(EndReason.EXITED);
        assertThat(r.exitCode()).isZero();
        assertThat(r.succeeded()).isTrue();
        assertThat(r.stdout()).isEqualTo("hello from the run\n");
        assertThat(r.stderr()).isEqualTo("to stderr\n");
        assertThat(r.outputs()).extracting(RunResult.Output::path)
                .containsExactly("/workspace/output/blob.bin", "/workspace/output/result.txt");
        RunResult.Output text = r.output("/workspace/output/result.txt").orElseThrow();
        assertThat(text.text()).isEqualTo("stdin=42 file=placed\n");
        assertThat(text.size()).isEqualTo(text.content().length);
        RunResult.Output blob = r.output("/workspace/output/blob.bin").orElseThrow();
        assertThat(blob.returned()).isTrue();
        assertThat(blob.size()).isEqualTo(256);
        byte[] expected = new byte[256];
        for (int i = 0; i < 256; i++) {
            expected[i] = (byte) i;
        }
        assertThat(blob.content()).isEqualTo(expected);

        assertThat(runner.list()).as("the run's sandbox is destroyed by the time the answer comes").isEmpty();
    }

    @Test
    void aFailingProgramIsANormalResultAndItsSandboxIsGone() {
        RunResult r = runner.run(Language.SH, "echo partial; exit 3");

        assertThat(r.endReason()).isEqualTo(EndReason.EXITED);
        assertThat(r.exitCode()).isEqualTo(3);
        assertThat(r.stdout()).isEqualTo("partial\n");
        assertThat(r.outputs()).isEmpty();
        HttpResponse<String> list = live.raw("GET", "/v1/sandboxes", null, RUNNER);
        assertThat(list.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(list.body()).path("sandboxes")).isEmpty();
    }

    @Test
    void aClientWithoutRunIsRefusedByTheGrantControl() {
        HttpResponse<String> r = live.raw("POST", "/v1/run", "{\"language\": \"python\", \"code\": \"print(1)\"}", STEPPER);

        assertThat(r.statusCode()).as(r.body()).isEqualTo(403);
        JsonNode error = JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asString()).isEqualTo("forbidden");
        assertThat(error.path("control").asString()).isEqualTo("grant");
        assertThat(error.path("rule").asString()).isEqualTo("clients.stepper.allow");
        assertThat(error.path("message").asString()).contains("may not call run");
        assertThat(live.audit(null, AuditRecord.LIFECYCLE)).noneMatch(rec -> rec.actor().startsWith("stepper@"));
    }

    @Test
    void aBadBodyIsAnInvalidArgument() {
        HttpResponse<String> r = live.raw("POST", "/v1/run", "{\"code\": \"print(1)\"}", RUNNER);

        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        assertThat(JSON.readTree(r.body()).path("error").path("message").asString()).contains("'language'");
    }

    @Test
    void theAuditLogHoldsTheRunLikeRunCode() {
        runner.run(Language.PYTHON, "print('audited')");

        // every record the runner's requests made, in order; the runner does nothing but runs and lists
        List<AuditRecord> mine = live.audit(null, null).stream().filter(r -> r.actor().equals("runner@rest")).toList();
        int i = find(mine, 0, "run request", kind(AuditRecord.REQUEST, "endpoint", "POST /v1/run"));
        assertThat(detail(mine.get(i)).path("operation").asString()).isEqualTo("run");
        assertThat(mine.get(i + 1).kind()).isEqualTo(AuditRecord.AUTHORIZATION);
        assertThat(detail(mine.get(i + 1)).path("decision").asString()).isEqualTo("allow");
        i = find(mine, i + 2, "created", kind(AuditRecord.LIFECYCLE, "event", "created"));
        String sandbox = mine.get(i).sandbox();
        assertThat(sandbox).startsWith(live.sandboxPrefix);
        assertThat(detail(mine.get(i)).path("client").asString()).isEqualTo("runner");
        assertThat(detail(mine.get(i)).path("profile").asString()).isEqualTo("default");
        i = find(mine, i + 1, "execution", kind(AuditRecord.EXECUTION, null, null));
        assertThat(mine.get(i).sandbox()).isEqualTo(sandbox);
        i = find(mine, i + 1, "result", kind(AuditRecord.RESULT, "endReason", "exited"));
        i = find(mine, i + 1, "destroyed", kind(AuditRecord.LIFECYCLE, "event", "destroyed"));
        assertThat(mine.get(i).sandbox()).isEqualTo(sandbox);
        // each sandbox a run created was destroyed by the same actor
        List<AuditRecord> lifecycle = live.audit(null, AuditRecord.LIFECYCLE).stream()
                .filter(r -> r.actor().equals("runner@rest")).toList();
        for (AuditRecord created : lifecycle.stream().filter(kind(AuditRecord.LIFECYCLE, "event", "created")).toList()) {
            assertThat(lifecycle).as("destroyed record of %s", created.sandbox())
                    .anyMatch(r -> r.sandbox().equals(created.sandbox()) && detail(r).path("event").asString().equals("destroyed"));
        }
    }

    private static JsonNode detail(AuditRecord r) {
        return JSON.readTree(r.detail());
    }

    private static Predicate<AuditRecord> kind(String kind, String field, String value) {
        return r -> r.kind().equals(kind) && (field == null || value.equals(detail(r).path(field).asString()));
    }

    private static int find(List<AuditRecord> records, int from, String what, Predicate<AuditRecord> p) {
        for (int i = from; i < records.size(); i++) {
            if (p.test(records.get(i))) {
                return i;
            }
        }
        throw new AssertionError("no " + what + " record after position " + from + " in " + records);
    }
}
