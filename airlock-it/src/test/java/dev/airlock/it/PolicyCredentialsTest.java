package dev.airlock.it;

import dev.airlock.core.AirlockException;
import dev.airlock.egress.RecordingServer;
import dev.airlock.egress.TestTls;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * A policy's secrets against a real server, over REST: a profile's credential, read from a file on
 * the host, reaches the bound HTTPS host (test.example, the policy's name for a local origin whose
 * test CA the server trusts through {@code egressCa}) as {@code Authorization: Bearer <value>},
 * while the sandbox, its output, the REST responses, the egress records and every byte of the
 * server's data directory (the audit database included) never hold the value. A secret that
 * cannot be resolved makes the create fail with 503 naming it and its source, never a value.
 */
class PolicyCredentialsTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    /** Never sent into a sandbox whole: code inside searches for the two halves joined in memory. */
    private static final String SECRET_HEAD = "ghp_";
    private static final String SECRET_TAIL = UUID.randomUUID().toString().replace("-", "");
    private static final String SECRET = SECRET_HEAD + SECRET_TAIL;
    /** An environment variable no one sets: the secret drawn from it cannot be resolved. */
    private static final String UNSET_VARIABLE = "AIRLOCK_TEST_SECRET_NEVER_SET_0F3A";

    @TempDir
    static Path tmp;
    private static TestTls tls;
    private static RecordingServer https;
    private static RecordingServer http;
    private static Path secretFile;
    private static LiveServer live;
    /** Every REST response body this class received from the live server. */
    private static final List<String> responses = new CopyOnWriteArrayList<>();

    /** Every log event of the server while this class runs, Airlock's own at DEBUG. */
    private static final ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> LOGS =
            new ch.qos.logback.core.read.ListAppender<>();
    private static ch.qos.logback.classic.Level airlockLevel;

    @BeforeAll
    static void start() throws Exception {
        ch.qos.logback.classic.LoggerContext context = (ch.qos.logback.classic.LoggerContext) org.slf4j.LoggerFactory.getILoggerFactory();
        LOGS.setContext(context);
        LOGS.start();
        context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).addAppender(LOGS);
        airlockLevel = context.getLogger("dev.airlock").getLevel();
        context.getLogger("dev.airlock").setLevel(ch.qos.logback.classic.Level.DEBUG);
        assertThat(System.getenv(UNSET_VARIABLE)).as(UNSET_VARIABLE + " must not be set for this test").isNull();
        tls = TestTls.create(tmp, "test.example", "other.example");
        https = new RecordingServer(tls.serverContext());
        http = new RecordingServer(null);
        Path secrets = Files.createDirectory(tmp.resolve("secrets"));
        Files.setPosixFilePermissions(secrets, PosixFilePermissions.fromString("rwx------"));
        secretFile = secrets.resolve("api-token");
        Files.writeString(secretFile, SECRET + "\n");
        Files.setPosixFilePermissions(secretFile, PosixFilePermissions.fromString("rw-------"));
        String network = """
                    network:
                      allow: [{host: test.example}, {host: other.example}]
                      ranges: [127.0.0.0/8]
                      hosts: {test.example: [127.0.0.1], other.example: [127.0.0.1]}
                """;
        live = LiveServer.withPolicy("""
                secrets:
                  api-token:
                    file: %s
                    prefix: "Bearer "
                    destinations: ["test.example:%d"]
                  from-unset-env:
                    env: %s
                    destinations: [test.example]
                  from-missing-file:
                    file: %s
                    destinations: [test.example]
                profiles:
                  default: {}
                  api:
                %s    credentials: [api-token]
                  unset-env:
                %s    credentials: [api-token, from-unset-env]
                  missing-file:
                %s    credentials: [from-missing-file]
                clients:
                  local: {tokenFile: token, profiles: [default, api, unset-env, missing-file], allow: ["*"]}
                """.formatted(secretFile, https.port(), UNSET_VARIABLE, secrets.resolve("absent"), network, network, network),
                c -> c.withPoolSize(0).withEgressCa(tls.caPem));
    }

    @AfterAll
    static void stop() throws IOException {
        try {
            if (live != null) {
                // Everything the server keeps on disk, after every test of this class: the audit
                // database (and its write-ahead log), the state, the token, the policy, outputs.
                assertThat(live.server.audit().flush(10_000)).as("audit writer caught up").isTrue();
                Map<String, byte[]> files = new TreeMap<>();
                try (Stream<Path> walk = Files.walk(live.dataDir)) {
                    for (Path p : walk.filter(Files::isRegularFile).toList()) {
                        files.put(live.dataDir.relativize(p).toString(), Files.readAllBytes(p));
                    }
                }
                assertThat(files).containsKey("airlock.db");
                files.forEach((name, bytes) -> assertThat(new String(bytes, StandardCharsets.ISO_8859_1))
                        .as("data directory file %s", name).doesNotContain(SECRET_TAIL));
                assertThat(responses).isNotEmpty().allSatisfy(body -> assertThat(body).doesNotContain(SECRET_TAIL));
                // nor any log line, message or exception of the server, down to Airlock's DEBUG lines
                ch.qos.logback.classic.LoggerContext context = (ch.qos.logback.classic.LoggerContext) org.slf4j.LoggerFactory.getILoggerFactory();
                context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME).detachAppender(LOGS);
                context.getLogger("dev.airlock").setLevel(airlockLevel);
                assertThat(LOGS.list).as("log events while secrets were in use").isNotEmpty();
                assertThat(LOGS.list).allSatisfy(e -> {
                    assertThat(e.getFormattedMessage()).doesNotContain(SECRET_TAIL);
                    if (e.getThrowableProxy() != null) {
                        assertThat(ch.qos.logback.classic.spi.ThrowableProxyUtil.asString(e.getThrowableProxy())).doesNotContain(SECRET_TAIL);
                    }
                });
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        } finally {
            if (live != null) {
                live.close();
            }
            https.close();
            http.close();
        }
    }

    private static HttpResponse<String> raw(String method, String path, String body) {
        HttpResponse<String> r = live.raw(method, path, body);
        responses.add(r.body());
        return r;
    }

    private static JsonNode ok(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return r.body().isEmpty() ? null : JSON.readTree(r.body());
    }

    private static String create(String profile) {
        return ok(raw("POST", "/v1/sandboxes", "{\"profile\": \"" + profile + "\"}"), 201).path("id").asString();
    }

    /** Runs {@code body} (a JSON exec request) and insists it exited 0. */
    private static JsonNode exec(String id, ObjectNode body) {
        JsonNode result = ok(raw("POST", "/v1/sandboxes/" + id + "/exec", body.toString()), 200);
        assertThat(result.path("exitCode").asInt()).as("stdout: %s; stderr: %s", result.path("stdout"), result.path("stderr")).isZero();
        assertThat(result.path("stdout").asString() + result.path("stderr").asString()).doesNotContain(SECRET_TAIL);
        return result;
    }

    private static String python(String id, String code) {
        ObjectNode body = JSON.createObjectNode();
        body.put("language", "python");
        body.put("code", code);
        return exec(id, body).path("stdout").asString();
    }

    private static String shell(String id, String script) {
        ObjectNode body = JSON.createObjectNode();
        body.putArray("command").add("sh").add("-c").add(script);
        return exec(id, body).path("stdout").asString();
    }

    /** What the origin received on the connection of {@code path}, once that connection ended. */
    private static String receivedFor(RecordingServer server, String path) {
        String[] hit = new String[1];
        await().atMost(Duration.ofSeconds(20)).until(() -> {
            hit[0] = server.received.stream().filter(r -> r.contains(" " + path + " ")).findFirst().orElse(null);
            return hit[0] != null;
        });
        return hit[0];
    }

    private static String pyString(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    @Test
    void theBoundHostGetsTheSecretAndNothingElseEverHoldsIt() throws IOException {
        String id = create("api");
        String testCa = Files.readString(tls.caPem);
        // The bound destination (HTTPS, intercepted: the sandbox trusts its own CA through
        // SSL_CERT_FILE), another allowed name (an opaque tunnel: the origin's own certificate),
        // and the bound name on a port the secret is not bound to (plain HTTP).
        String out = python(id, """
                import ssl, urllib.request
                print(urllib.request.urlopen("https://test.example:%d/bound", timeout=20).read().decode().strip())
                ctx = ssl.create_default_context(cadata=\"\"\"%s\"\"\")
                print(urllib.request.urlopen("https://other.example:%d/other-name", context=ctx, timeout=20).read().decode().strip())
                print(urllib.request.urlopen("http://test.example:%d/other-port", timeout=20).read().decode().strip())
                """.formatted(https.port(), testCa, https.port(), http.port()));
        assertThat(out).isEqualTo("seen GET /bound\nseen GET /other-name\nseen GET /other-port\n");
        assertThat(receivedFor(https, "/bound")).contains("\r\nAuthorization: Bearer " + SECRET + "\r\n");
        assertThat(receivedFor(https, "/other-name")).doesNotContain(SECRET_TAIL).doesNotContainIgnoringCase("authorization");
        assertThat(receivedFor(http, "/other-port")).doesNotContain(SECRET_TAIL).doesNotContainIgnoringCase("authorization");

        // The sandbox learns that a credential exists for the host, never its value.
        String env = shell(id, "env; echo; tr '\\0' '\\n' < /proc/self/environ; (tr '\\0' '\\n' < /proc/1/environ) 2>&1; true");
        assertThat(env).contains("AIRLOCK_CREDENTIAL_API_TOKEN=injected-by-airlock-for:test.example:" + https.port(),
                "SSL_CERT_FILE=/run/airlock/ca-bundle.pem");

        // Every readable file, searched from inside; the value is joined only in the search's
        // memory. /proc and /sys are the kernel's, /usr is the host's read-only /usr shared by
        // every sandbox; a planted marker shows that the search finds what is there.
        String search = python(id, """
                import os
                def search(needle):
                    hits, files = [], 0
                    for root, dirs, names in os.walk("/", onerror=lambda e: None):
                        if root == "/":
                            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "usr")]
                        for n in names:
                            p = os.path.join(root, n)
                            try:
                                if not os.path.isfile(p) or os.path.getsize(p) > 64 << 20:
                                    continue
                                with open(p, "rb") as f:
                                    data = f.read()
                            except OSError:
                                continue
                            files += 1
                            if needle in data:
                                hits.append(p)
                    for p in ["/run/airlock/ca-bundle.pem", "/run/airlock/airlock-ca.pem", "/proc/self/environ", "/proc/self/cmdline",
                              "/proc/1/environ", "/proc/1/cmdline"]:
                        try:
                            data = open(p, "rb").read()
                        except OSError:
                            continue
                        files += 1
                        if needle in data:
                            hits.append(p)
                    return files, hits
                marker = ("planted-" + "marker").encode()
                with open("/workspace/planted", "wb") as f:
                    f.write(b"x" + marker + b"y")
                files, hits = search((%s + %s).encode())
                print("files", files, "hits", hits)
                print("control", search(marker)[1])
                print("environ", (%s + %s) in repr(dict(os.environ)))
                """.formatted(pyString(SECRET_HEAD), pyString(SECRET_TAIL), pyString(SECRET_HEAD), pyString(SECRET_TAIL)));
        assertThat(search).contains("hits []\n", "control ['/workspace/planted']\n", "environ False\n");
        assertThat(Integer.parseInt(search.split(" ")[1])).as(search).isGreaterThan(10);

        // The egress records name the credential on the connection that carried it, and only there.
        JsonNode bound = await().atMost(Duration.ofSeconds(20)).until(() -> egressRecord(id, "test.example", https.port()),
                r -> r != null);
        assertThat(bound.path("allowed").asBoolean()).isTrue();
        assertThat(bound.path("credentials").toString()).isEqualTo("[\"api-token\"]");
        JsonNode other = await().atMost(Duration.ofSeconds(20)).until(() -> egressRecord(id, "other.example", https.port()),
                r -> r != null);
        assertThat(other.path("credentials").toString()).isEqualTo("[]");
        JsonNode otherPort = await().atMost(Duration.ofSeconds(20)).until(() -> egressRecord(id, "test.example", http.port()),
                r -> r != null);
        assertThat(otherPort.path("credentials").toString()).isEqualTo("[]");

        // The sandbox as REST shows it: no value anywhere (every response is checked again at the end).
        for (String path : List.of("", "/network", "/egress")) {
            assertThat(ok(raw("GET", "/v1/sandboxes/" + id + path, null), 200).toString()).doesNotContain(SECRET_TAIL);
        }
        ok(raw("DELETE", "/v1/sandboxes/" + id, null), 204);

        List<AuditRecord> egress = live.audit(id, AuditRecord.EGRESS);
        assertThat(egress).anySatisfy(r -> {
            JsonNode d = JSON.readTree(r.detail());
            assertThat(d.path("destination").asString()).isEqualTo("test.example");
            assertThat(d.path("port").asInt()).isEqualTo(https.port());
            assertThat(d.path("credentials").toString()).isEqualTo("[\"api-token\"]");
        });
        assertThat(egress).allSatisfy(r -> assertThat(r.detail()).doesNotContain(SECRET_TAIL));
        List<AuditRecord> lifecycle = live.audit(id, AuditRecord.LIFECYCLE);
        assertThat(lifecycle).anySatisfy(r -> assertThat(r.detail()).contains("\"credentials\":[\"api-token\"]"));
    }

    /** The sandbox's egress record of {@code destination}:{@code port}, or null while there is none. */
    private static JsonNode egressRecord(String id, String destination, int port) {
        for (JsonNode r : ok(raw("GET", "/v1/sandboxes/" + id + "/egress", null), 200).path("records")) {
            if (r.path("destination").asString().equals(destination) && r.path("port").asInt() == port) {
                return r;
            }
        }
        return null;
    }

    @Test
    void aSecretThatCannotBeResolvedFailsTheCreateWith503NamingItsSourceNeverAValue() {
        int before = ok(raw("GET", "/v1/sandboxes", null), 200).path("sandboxes").size();

        HttpResponse<String> unset = raw("POST", "/v1/sandboxes", "{\"profile\": \"unset-env\"}");
        assertThat(unset.statusCode()).as(unset.body()).isEqualTo(503);
        JsonNode error = JSON.readTree(unset.body()).path("error");
        assertThat(error.path("code").asString()).isEqualTo("unavailable");
        // The profile's other secret (resolved first) shows in no part of the answer.
        assertThat(error.path("message").asString()).contains("secret 'from-unset-env'", "environment variable " + UNSET_VARIABLE)
                .doesNotContain(SECRET_TAIL);

        HttpResponse<String> missing = raw("POST", "/v1/sandboxes", "{\"profile\": \"missing-file\"}");
        assertThat(missing.statusCode()).as(missing.body()).isEqualTo(503);
        error = JSON.readTree(missing.body()).path("error");
        assertThat(error.path("code").asString()).isEqualTo("unavailable");
        assertThat(error.path("message").asString()).contains("secret 'from-missing-file'", "file " + tmp.resolve("secrets/absent"));

        assertThat(ok(raw("GET", "/v1/sandboxes", null), 200).path("sandboxes").size()).as("no sandbox was made").isEqualTo(before);
    }

    @Test
    void anEgressCaFileThatCannotBeUsedStopsTheStartNamingIt() throws IOException {
        Path garbage = Files.writeString(tmp.resolve("not-a-ca.pem"), "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n");
        Path empty = Files.writeString(tmp.resolve("empty.pem"), "");
        Path absent = tmp.resolve("absent-ca.pem");
        List<String> messages = new ArrayList<>();
        for (Path ca : List.of(garbage, empty, absent)) {
            Path data = Files.createTempDirectory("airlock-e2e-");
            try {
                assertThatThrownBy(() -> AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(data).withPoolSize(0).withEgressCa(ca)).close())
                        .isInstanceOf(AirlockException.class)
                        .satisfies(e -> messages.add(e.getMessage()))
                        .hasMessageContaining("egress CA file " + ca);
            } finally {
                LiveServer.deleteTree(data);
            }
        }
        assertThat(messages.get(0)).contains("does not hold PEM certificates");
        assertThat(messages.get(1)).contains("holds no certificate");
        assertThat(messages.get(2)).contains("cannot be read");
    }
}
