package dev.airlock.it;

import dev.airlock.client.Airlock;
import dev.airlock.client.ForbiddenException;
import dev.airlock.client.Limits;
import dev.airlock.client.QuotaExceededException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * One forbidden action through every door, and the same refusal from each: a client asks for more
 * memory than its profile allows, and (separately) for a sandbox beyond its quota, over REST, MCP
 * over stdio (a real {@code airlock mcp} process), MCP over Streamable HTTP, the Java SDK and (for
 * the quota, as E2B's create names no limits) the E2B door. Each
 * door must name the same control and rule (REST in the error body, MCP at the end of the error
 * text, the SDK in its exception), and the audit log must hold exactly one deny per door, equal
 * but for the actor. A door that renders a refusal differently, or records it differently, fails
 * here. The CLI's {@code airlock approvals} shows the grant control's refusal the same way.
 *
 * <p>The stdio server is a process of its own with its own data directory: two servers must not
 * share one, because each numbers and chains the audit log it writes.
 */
class CrossDoorRefusalTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String AGENT = "alk_crossdoor-agent-0123456789abcdef01234567";
    private static final String POLICY = """
            profiles:
              default: {}
              small:
                limits: {memory: 128m}
                maxLimits: {memory: 256m}
            clients:
              local: {tokenFile: token, profiles: [default], allow: ["*"]}
              agent:
                tokenSha256: %s
                profiles: [small]
                allow: [sandbox.create, sandbox.read, sandbox.destroy]
                quotas: {sandboxes: 1}
            """.formatted(HexFormat.of().formatHex(Policy.sha256(AGENT)));

    private static final String TOO_MUCH_MEMORY = "{\"limits\": {\"memory\": \"1g\"}}";
    private static final String PROFILE_RULE = "profiles.small.maxLimits";
    private static final String QUOTA_RULE = "clients.agent.quotas.sandboxes";

    private static LiveServer live;
    /** The data directory of the stdio servers ({@code airlock mcp} processes) and their policy file. */
    private static Path stdioData;
    private static Path stdioPolicy;

    @BeforeAll
    static void start() throws IOException {
        live = LiveServer.withPolicy(POLICY, c -> c.withPoolSize(0));
        stdioData = Files.createTempDirectory("airlock-e2e-stdio-");
        stdioPolicy = stdioData.resolve("policy.yaml");
        Files.writeString(stdioPolicy, POLICY);
    }

    @AfterAll
    static void stop() {
        try {
            if (live != null) {
                live.close();
            }
        } finally {
            if (stdioData != null) {
                LiveServer.deleteTree(stdioData);
            }
        }
    }

    @Test
    void aLimitAboveTheProfileIsRefusedByTheSameControlAtEveryDoor() {
        String tag = "[refused by profile: " + PROFILE_RULE + "]";

        // (a) REST, by hand
        JsonNode error = refusedOverRest(live.raw("POST", "/v1/sandboxes", TOO_MUCH_MEMORY, AGENT), 403, "forbidden");
        assertThat(error.path("control").asString()).isEqualTo("profile");
        assertThat(error.path("rule").asString()).isEqualTo(PROFILE_RULE);
        assertThat(error.path("message").asString()).contains("memory 1g > 256m");

        // (b) MCP over stdio: an airlock mcp process acting as the same client
        try (RawMcpStdio stdio = RawMcpStdio.open(stdioData, stdioPolicy, "agent")) {
            assertThat(refusedOverMcp(stdio.call(2, "sandbox_create", TOO_MUCH_MEMORY))).contains("memory 1g > 256m").endsWith(tag);
        }

        // (c) MCP over Streamable HTTP
        RawMcp http = new RawMcp(live.uri(), AGENT);
        String session = http.open();
        assertThat(refusedOverMcp(http.call(session, 2, "sandbox_create", TOO_MUCH_MEMORY))).contains("memory 1g > 256m").endsWith(tag);

        // (d) the Java SDK
        try (Airlock sdk = Airlock.connect(live.uri(), AGENT)) {
            ForbiddenException e = catchThrowableOfType(ForbiddenException.class,
                    () -> sdk.create(SandboxSpec.builder().limits(Limits.builder().memory("1g").build()).build()).close());
            assertThat(e).as("the SDK's refusal").isNotNull();
            assertThat(e.status()).isEqualTo(403);
            assertThat(e.control()).isEqualTo("profile");
            assertThat(e.rule()).isEqualTo(PROFILE_RULE);
            assertThat(e.getMessage()).contains("memory 1g > 256m").endsWith(tag);
        }

        assertOneEqualDenyPerDoor("profile", PROFILE_RULE, "permission_denied", session);
    }

    @Test
    void aSandboxBeyondTheQuotaIsRefusedByTheSameControlAtEveryDoor() {
        String tag = "[refused by quota: " + QUOTA_RULE + "]";

        // (a) REST, by hand: the client's one sandbox, then a second
        String held = created(live.raw("POST", "/v1/sandboxes", "{}", AGENT));
        try {
            JsonNode error = refusedOverRest(live.raw("POST", "/v1/sandboxes", "{}", AGENT), 429, "quota_exceeded");
            assertThat(error.path("control").asString()).isEqualTo("quota");
            assertThat(error.path("rule").asString()).isEqualTo(QUOTA_RULE);
            assertThat(error.path("message").asString()).contains("already holds 1 sandboxes");
        } finally {
            assertThat(live.raw("DELETE", "/v1/sandboxes/" + held, null, AGENT).statusCode()).isEqualTo(204);
        }

        // (b) MCP over stdio: quotas are per server, so the stdio server's own first sandbox
        String stdioPrefix;
        try (RawMcpStdio stdio = RawMcpStdio.open(stdioData, stdioPolicy, "agent")) {
            String first = createdOverMcp(stdio.call(2, "sandbox_create", "{}"));
            stdioPrefix = first.substring(0, first.indexOf('-', 3) + 1);
            assertThat(refusedOverMcp(stdio.call(3, "sandbox_create", "{}"))).contains("already holds 1 sandboxes").endsWith(tag);
            assertThat(stdio.call(4, "sandbox_destroy", "{\"sandboxId\": \"" + first + "\"}").path("result").path("isError").asBoolean())
                    .as("sandbox_destroy over stdio").isFalse();
        }
        assertThat(LiveServer.leftovers(stdioPrefix)).as("what the stdio server's sandboxes left after it exited").isEmpty();

        // (c) MCP over Streamable HTTP
        RawMcp http = new RawMcp(live.uri(), AGENT);
        String session = http.open();
        String first = createdOverMcp(http.call(session, 2, "sandbox_create", "{}"));
        try {
            assertThat(refusedOverMcp(http.call(session, 3, "sandbox_create", "{}"))).contains("already holds 1 sandboxes").endsWith(tag);
        } finally {
            assertThat(http.call(session, 4, "sandbox_destroy", "{\"sandboxId\": \"" + first + "\"}").path("result").path("isError").asBoolean())
                    .as("sandbox_destroy over MCP HTTP").isFalse();
        }

        // (d) the Java SDK
        try (Airlock sdk = Airlock.connect(live.uri(), AGENT); RemoteSandbox one = sdk.create()) {
            QuotaExceededException e = catchThrowableOfType(QuotaExceededException.class, () -> sdk.create().close());
            assertThat(e).as("the SDK's refusal (holding %s)", one.id()).isNotNull();
            assertThat(e.status()).isEqualTo(429);
            assertThat(e.control()).isEqualTo("quota");
            assertThat(e.rule()).isEqualTo(QUOTA_RULE);
            assertThat(e.getMessage()).contains("already holds 1 sandboxes").endsWith(tag);
            // an operation the client is not granted, in the sandbox it holds: the grant control, named alike
            ForbiddenException notGranted = catchThrowableOfType(ForbiddenException.class, () -> one.exec("true"));
            assertThat(notGranted).as("exec by a client without it").isNotNull();
            assertThat(notGranted.control()).isEqualTo("grant");
            assertThat(notGranted.rule()).isEqualTo("clients.agent.allow");
            assertThat(notGranted.getMessage()).endsWith("[refused by grant: clients.agent.allow]");
        }

        // (e) the E2B door, as E2B's SDKs call it (its create names no limits: only the quota can be asked of it here)
        String e2bFirst = JSON.readTree(e2b("POST", "/v2/sandboxes", "{\"templateID\": \"base\"}", 201)).path("sandboxID").asString();
        try {
            JsonNode error = JSON.readTree(e2b("POST", "/v2/sandboxes", "{\"templateID\": \"base\"}", 429));
            assertThat(error.path("code").asInt()).isEqualTo(429);
            assertThat(error.path("message").asString()).contains("already holds 1 sandboxes")
                    .endsWith("(Airlock control quota, rule " + QUOTA_RULE + ")");
        } finally {
            e2b("DELETE", "/sandboxes/" + e2bFirst, null, 204);
        }

        assertOneEqualDenyPerDoor("quota", QUOTA_RULE, "limit_exceeded", session, "agent@e2b");
    }

    /** A request to the E2B door with the agent's E2B API key; fails unless answered with {@code status}. */
    private static String e2b(String method, String path, String body, int status) {
        java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(live.server.e2bUri().resolve(path))
                .header("X-API-Key", dev.airlock.server.e2b.E2bDoor.apiKey(AGENT))
                .method(method, body == null ? java.net.http.HttpRequest.BodyPublishers.noBody() : java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (body != null) {
            b.header("Content-Type", "application/json");
        }
        try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
            HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(method + " " + path + ": " + r.body()).isEqualTo(status);
            return r.body();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void theCliShowsWhichControlRefused() throws IOException {
        Path tokenFile = Files.createTempFile("agent", ".token", PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
            Files.writeString(tokenFile, AGENT);
            // the agent is not granted approvals: the grant control refuses, and the CLI says so as the other doors do
            InProcessCli cli = InProcessCli.run("approvals", "list", "--url", live.uri().toString(), "--token-file", tokenFile.toString());
            assertThat(cli.exit()).as(cli.err()).isEqualTo(2);
            assertThat(cli.err()).contains("client 'agent' may not call approvals").contains("[refused by grant: clients.agent.allow]");
            // the same refusal over REST names the same control and rule
            JsonNode error = refusedOverRest(live.raw("GET", "/v1/approvals", null, AGENT), 403, "forbidden");
            assertThat(error.path("control").asString()).isEqualTo("grant");
            assertThat(error.path("rule").asString()).isEqualTo("clients.agent.allow");
        } finally {
            Files.delete(tokenFile);
        }
    }

    /**
     * The audit logs (the HTTP server's and the stdio server's) hold exactly one deny by
     * {@code control} and {@code rule} per door: REST and the SDK as {@code agent@rest}, stdio as
     * {@code agent@mcp-stdio}, HTTP as {@code agent@mcp-http:<session>}; their details are equal.
     */
    private static void assertOneEqualDenyPerDoor(String control, String rule, String refusal, String httpSession, String... moreActors) {
        List<AuditRecord> denies = Stream.concat(live.audit(null, AuditRecord.AUTHORIZATION).stream(), stdioAudit().stream())
                .filter(r -> {
                    JsonNode d = JSON.readTree(r.detail());
                    return d.path("decision").asString().equals("deny") && d.path("control").asString().equals(control)
                            && d.path("rule").asString().equals(rule);
                }).toList();
        List<String> actors = new java.util.ArrayList<>(List.of("agent@rest", "agent@mcp-stdio", "agent@mcp-http:" + httpSession, "agent@rest"));
        actors.addAll(List.of(moreActors));
        assertThat(denies).extracting(AuditRecord::actor).containsExactlyInAnyOrderElementsOf(actors);
        JsonNode first = JSON.readTree(denies.getFirst().detail());
        assertThat(first.path("operation").asString()).isEqualTo("sandbox.create");
        assertThat(first.path("refusal").asString()).isEqualTo(refusal);
        for (AuditRecord r : denies) {
            assertThat(JSON.readTree(r.detail())).as("the deny of %s", r.actor()).isEqualTo(first);
            assertThat(r.sandbox()).as("the deny of %s names no sandbox", r.actor()).isNull();
        }
    }

    /** The stdio servers' audit log; every one of them has exited by now. */
    private static List<AuditRecord> stdioAudit() {
        try (AuditReader reader = AuditReader.open(stdioData.resolve("airlock.db"))) {
            return reader.query(new AuditReader.Query(null, AuditRecord.AUTHORIZATION, null, 0));
        }
    }

    private static JsonNode refusedOverRest(HttpResponse<String> r, int status, String code) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode error = JSON.readTree(r.body()).path("error");
        assertThat(error.path("code").asString()).isEqualTo(code);
        return error;
    }

    private static String created(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body()).path("id").asString();
    }

    /** The text of an MCP tool result that must be an error (not a JSON-RPC error: the call was made and refused). */
    private static String refusedOverMcp(JsonNode reply) {
        JsonNode result = reply.path("result");
        assertThat(result.path("isError").asBoolean()).as(reply.toString()).isTrue();
        return result.path("content").get(0).path("text").asString();
    }

    private static String createdOverMcp(JsonNode reply) {
        JsonNode result = reply.path("result");
        assertThat(result.path("isError").asBoolean()).as(reply.toString()).isFalse();
        String id = result.path("structuredContent").path("sandboxId").asString();
        assertThat(id).as(reply.toString()).startsWith("al-");
        return id;
    }
}
