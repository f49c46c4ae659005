package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.Printable;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.config.ServerConfig;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The egress refusal flood: a real server, in this JVM, on the scenario's own state and data
 * directories and a free loopback port, with a profile that has some network (so its sandboxes get
 * an egress proxy). A sandbox's code opens connections to the proxy port as fast as it can for
 * {@link #FLOOD}, and on until it made {@link #MIN_ATTEMPTS} (slower tiers such as gVisor need
 * longer) but never past {@link #MAX_FLOOD}, each asking for a destination no rule allows. Every attempt must be refused, the
 * audit log must grow by at most {@link #MAX_RECORDS} egress records whose counts add up to the
 * attempts, the chain must still verify, {@code /health} must answer within {@link #HEALTH_BOUND}
 * throughout, and nothing of the sandbox may remain.
 */
final class EgressFloodScenario {

    /** How long the sandbox's code floods at least. */
    static final Duration FLOOD = Duration.ofSeconds(5);
    /**
     * Fewer refused attempts than this would be too small a flood to show the folding: the flood goes
     * on until it made them. Divided by the tier's time scale (a microVM guest under software
     * emulation makes about 45 a second here: 200 there), since the flood must stay in one window.
     */
    static final int MIN_ATTEMPTS = 1000;
    /** The flood stops here even with fewer attempts; inside one refusal window (60 s), and with its margin within the default 30 s timeout cap. */
    static final Duration MAX_FLOOD = Duration.ofSeconds(20);
    /**
     * Egress records the flood may add: its refusal window (60 s) opens at the first refusal, so the
     * whole flood falls in one: that refusal in full, and one record with the count of the rest.
     */
    static final int MAX_RECORDS = 2;
    /** The slowest {@code /health} answer allowed while the flood runs. */
    static final Duration HEALTH_BOUND = Duration.ofSeconds(1);
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String POLICY = """
            profiles:
              default: {}
              net:
                network:
                  allow: [{host: allowed.verify.invalid, ports: [443]}]
            clients:
              local: {tokenFile: token, profiles: [default, net], allow: ["*"]}
            """;
    /** Straight to the proxy port, as hostile code would: CONNECT and plain HTTP to names and addresses no rule allows. */
    /** The flood's code: on for {@link #FLOOD}, and until {@code minAttempts}, never past {@link #MAX_FLOOD}. */
    private static String floodCode(int minAttempts) {
        return """
            import socket, sys, time
            asks = [
                lambda i: b"CONNECT f%d.denied.invalid:443 HTTP/1.1\\r\\nHost: f%d.denied.invalid:443\\r\\n\\r\\n" % (i % 50, i % 50),
                lambda i: b"CONNECT 169.254.169.254:80 HTTP/1.1\\r\\nHost: 169.254.169.254:80\\r\\n\\r\\n",
                lambda i: b"GET http://f%d.denied.invalid/ HTTP/1.1\\r\\nHost: f%d.denied.invalid\\r\\n\\r\\n" % (i % 50, i % 50),
            ]
            attempts, refused, other = 0, 0, {}
            start = time.monotonic()
            while time.monotonic() - start < MAX_SECONDS and (time.monotonic() - start < SECONDS or attempts < MIN_ATTEMPTS):
                answer = b""
                try:
                    s = socket.create_connection(("127.0.0.1", 3128))
                    s.sendall(asks[attempts % 3](attempts))
                    while len(answer) < 12:
                        chunk = s.recv(64)
                        if not chunk:
                            break
                        answer += chunk
                    s.close()
                except OSError as e:
                    answer = repr(e).encode()
                attempts += 1
                if answer.startswith(b"HTTP/1.1 403"):
                    refused += 1
                else:
                    other[answer[:40]] = other.get(answer[:40], 0) + 1
            print("attempts", attempts)
            print("refused", refused)
            print("seconds", round(time.monotonic() - start))
            print(other, file=sys.stderr)
            """.replace("MAX_SECONDS", Long.toString(MAX_FLOOD.toSeconds())).replace("MIN_ATTEMPTS", Integer.toString(minAttempts))
            .replace("SECONDS", Long.toString(FLOOD.toSeconds()));
    }

    private EgressFloodScenario() {
    }

    static Outcome run(VerifyTarget target) throws IOException, InterruptedException {
        Path data = target.stateDir().resolveSibling("d");
        Files.createDirectories(data);
        Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx------"));
        Files.writeString(data.resolve("policy.yaml"), POLICY);
        List<String> problems = new ArrayList<>();
        StringBuilder happened = new StringBuilder();
        String id;
        long refused;
        try (AirlockServer server = AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(data).withDriver(target.settings())
                .withPoolSize(0).withPolicyFile(data.resolve("policy.yaml"))); HttpClient http = HttpClient.newHttpClient()) {
            JsonNode created = new ScenarioRest(http, server).call("POST", "/v1/sandboxes", "{\"profile\": \"net\"}", 201);
            id = created.path("id").asString();
            refused = flood(http, server, id, MIN_ATTEMPTS / target.timeScale(), happened, problems);
            if (refused < 0) {
                // too small a flood proves nothing, unless an attempt already got through
                return problems.isEmpty() ? Outcome.error(happened.toString()) : Outcome.broken(happened + "\n" + String.join("\n", problems));
            }
            if (!server.audit().flush(10_000)) {
                throw new IOException("the audit writer did not catch up within 10 s");
            }
            int during = egressRecords(data, id).size();
            happened.append("; while its refusal window was open the audit log held ").append(during).append(" egress record(s) of the sandbox");
            if (during > MAX_RECORDS) {
                problems.add("the flood added " + during + " egress records while it ran, more than " + MAX_RECORDS);
            }
            new ScenarioRest(http, server).call("DELETE", "/v1/sandboxes/" + id, null, 204);
        }
        // The server's shutdown closed its refusal windows: their counts are written now.
        checkRecords(data, id, refused, happened, problems);
        problems.addAll(target.leftovers(id));
        return RecoveryChecks.verdict(happened.toString(), problems);
    }

    /** Runs the flood under a watch of {@code /health}; the refused attempts, or -1 when the flood was too small to prove anything. */
    private static long flood(HttpClient http, AirlockServer server, String id, int minAttempts, StringBuilder happened,
                              List<String> problems)
            throws IOException, InterruptedException {
        JsonNode result;
        long slowest;
        long answers;
        try (HealthWatch health = new HealthWatch(server.uri())) {
            result = new ScenarioRest(http, server).call("POST", "/v1/sandboxes/" + id + "/exec", JSON.writeValueAsString(Map.of("language", "python",
                    "code", floodCode(minAttempts), "timeoutSeconds", MAX_FLOOD.toSeconds() + 10)), 200);
            health.close();
            slowest = health.slowestMillis();
            answers = health.answers();
        }
        long attempts = count(result, "attempts");
        long refused = count(result, "refused");
        if (attempts < 0 || refused < 0) {
            happened.append("the flood did not report its counts: ").append(Printable.quoted(result.toString(), Findings.SHOWN_CHARS));
            return -1;
        }
        happened.append("a sandbox's code tried ").append(attempts).append(" connections no rule allows in ").append(count(result, "seconds"))
                .append(" s, ").append(refused).append(" refused with 403; the server answered /health ").append(answers)
                .append(" times meanwhile, the slowest in ").append(slowest).append(" ms");
        if (slowest > HEALTH_BOUND.toMillis()) {
            problems.add("/health took " + slowest + " ms to answer during the flood, more than " + HEALTH_BOUND.toMillis()
                    + " ms (5000 ms: it did not answer)");
        }
        if (refused != attempts) {
            problems.add((attempts - refused) + " attempts were not refused with 403; their answers: "
                    + Printable.quoted(result.path("stderr").asString(""), Findings.SHOWN_CHARS));
        }
        if (refused < minAttempts) {
            happened.append("; too few refusals (under ").append(minAttempts).append(") to prove anything");
            return -1;
        }
        return refused;
    }

    /** After the server's shutdown: few records, every one a refusal, whose counts add up to {@code refused}; the chain verifies. */
    private static void checkRecords(Path data, String id, long refused, StringBuilder happened, List<String> problems) {
        List<AuditRecord> egress = egressRecords(data, id);
        long firsts = 0;
        long repeats = 0;
        for (AuditRecord r : egress) {
            JsonNode detail = JSON.readTree(r.detail());
            if (!"deny".equals(detail.path("decision").asString())) {
                problems.add("egress record " + r.seq() + " is not a refusal: " + Printable.quoted(r.detail(), Findings.SHOWN_CHARS));
            }
            JsonNode aggregated = detail.path("aggregated");
            if (aggregated.isMissingNode()) {
                firsts++;
            } else {
                repeats += aggregated.path("repeats").asLong();
            }
        }
        happened.append("; after shutdown ").append(egress.size()).append(" egress record(s): ").append(firsts).append(" in full and ")
                .append(repeats).append(" counted");
        if (egress.size() > MAX_RECORDS) {
            problems.add("the flood added " + egress.size() + " egress records, more than " + MAX_RECORDS);
        }
        if (firsts + repeats != refused) {
            problems.add("the egress records account for " + (firsts + repeats) + " refusals, the sandbox saw " + refused);
        }
        try (AuditReader reader = AuditReader.open(data.resolve(ServerConfig.DATABASE))) {
            AuditReader.Verdict v = reader.verify();
            if (v.ok()) {
                happened.append("; the audit chain verifies (").append(v.records()).append(" records)");
            } else {
                problems.add("the audit chain does not verify: " + v.problem());
            }
        }
    }

    private static List<AuditRecord> egressRecords(Path data, String id) {
        try (AuditReader reader = AuditReader.open(data.resolve(ServerConfig.DATABASE))) {
            return reader.query(new AuditReader.Query(id, AuditRecord.EGRESS, null, 0));
        }
    }

    /** The number the flood printed after {@code label} on stdout, or -1. */
    private static long count(JsonNode result, String label) {
        for (String line : result.path("stdout").asString("").split("\n")) {
            if (line.startsWith(label + " ") && line.substring(label.length() + 1).matches("[0-9]{1,12}")) {
                return Long.parseLong(line.substring(label.length() + 1));
            }
        }
        return -1;
    }

    /**
     * Asks {@code GET /health} every 100 ms on its own client while the flood runs and remembers the
     * slowest answer (one that failed or took over 5 s counts as 5 s).
     */
    private static final class HealthWatch implements AutoCloseable {

        private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        private final URI health;
        private final AtomicLong slowest = new AtomicLong();
        private final AtomicLong answers = new AtomicLong();
        private final Thread thread;
        private volatile boolean stop;

        HealthWatch(URI server) {
            this.health = URI.create(server + "/health");
            this.thread = Thread.ofVirtual().name("verify-health-watch").start(this::loop);
        }

        private void loop() {
            while (!stop) {
                long start = System.nanoTime();
                long millis;
                try {
                    HttpResponse<Void> r = http.send(HttpRequest.newBuilder(health).timeout(Duration.ofSeconds(5)).build(),
                            HttpResponse.BodyHandlers.discarding());
                    millis = r.statusCode() == 200 ? (System.nanoTime() - start) / 1_000_000 : 5_000;
                } catch (IOException e) {
                    millis = 5_000;
                } catch (InterruptedException e) {
                    return;
                }
                answers.incrementAndGet();
                slowest.accumulateAndGet(millis, Math::max);
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }

        long slowestMillis() {
            return slowest.get();
        }

        long answers() {
            return answers.get();
        }

        @Override
        public void close() throws InterruptedException {
            if (stop) {
                return;
            }
            stop = true;
            thread.join(10_000);
            http.close();
        }
    }
}
