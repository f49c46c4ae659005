package dev.airlock.it;

import dev.airlock.server.config.ClusterSettings;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedTrustManager;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.X509Certificate;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Three nodes of a cluster on one real PostgreSQL, each with its own port, data and state
 * (docs/cluster.md, "Placement" and "Between nodes"): creates through one node spread over all
 * three; exec (streamed), files, processes and a preview port work through a node that does not
 * hold the sandbox; the calls between nodes are TLS to a pinned certificate and signed with the
 * cluster's secret, and each port refuses the other's credentials.
 */
class ClusterRoutingTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final String SECRET = "cluster-secret-for-the-routing-tests-0123456789";
    private static final String OPERATOR = "alk_cluster-operator-token-0123456789abcdef01";
    private static final String OTHER = "alk_cluster-other-client-token-0123456789abcd";
    private static final String POLICY = """
            approvals: {timeoutSeconds: 60}
            profiles:
              default: {maxLifetimeSeconds: 600, ports: [8000]}
              watched: {approvals: [exec]}
            clients:
              local: {tokenFile: token, profiles: [default, watched], allow: ["*"]}
              operator: {tokenSha256: %s, profiles: [default], allow: [approvals]}
              other: {tokenSha256: %s, profiles: [default], allow: ["*"]}
            """.formatted(HexFormat.of().formatHex(dev.airlock.server.policy.Policy.sha256(OPERATOR)),
            HexFormat.of().formatHex(dev.airlock.server.policy.Policy.sha256(OTHER)));

    private static Postgres pg;
    private static Path secret;
    /** By name: alpha, beta, gamma. */
    private static final Map<String, LiveServer> NODES = new TreeMap<>();

    @BeforeAll
    static void start() throws IOException {
        pg = Postgres.start();
        secret = Files.createTempFile("airlock-cluster-secret", "");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        Files.writeString(secret, SECRET);
        for (String name : List.of("alpha", "beta", "gamma")) {
            NODES.put(name, LiveServer.withPolicy(POLICY, c -> c.withPoolSize(0).withE2bPort(ServerConfig.E2B_AFTER_API)
                    .withCluster(new ClusterSettings(pg.url(), name, secret, Duration.ofSeconds(5), 0))));
        }
    }

    @AfterAll
    static void stop() throws IOException {
        List<AutoCloseable> all = new ArrayList<>(NODES.values());
        all.add(pg);
        for (AutoCloseable c : all) {
            try {
                c.close();
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
        Files.deleteIfExists(secret);
    }

    private static JsonNode ok(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return r.body().isEmpty() ? null : JSON.readTree(r.body());
    }

    /** A sandbox created through {@code via}: its id and the node placement chose. */
    private record Placed(String id, String node) {
    }

    private static Placed create(LiveServer via) {
        JsonNode s = ok(via.raw("POST", "/v1/sandboxes", "{}"), 201);
        return new Placed(s.path("id").asString(), s.path("node").asString());
    }

    /** A sandbox held by a node other than {@code via}: creates through {@code via} until placement picks another (destroying the rest). */
    private static Placed elsewhere(LiveServer via, String viaName) {
        for (int i = 0; i < 50; i++) {
            Placed p = create(via);
            if (!p.node().equals(viaName)) {
                return p;
            }
            ok(via.raw("DELETE", "/v1/sandboxes/" + p.id(), null), 204);
        }
        throw new AssertionError("50 creates through " + viaName + " all stayed there");
    }

    private static Map<String, String> peers() {
        Map<String, String> out = new TreeMap<>();
        sql(db -> {
            try (ResultSet rs = db.createStatement().executeQuery("SELECT name, peer_address FROM airlock_nodes")) {
                while (rs.next()) {
                    out.put(rs.getString(1), rs.getString(2));
                }
            }
        });
        return out;
    }

    private interface Sql {
        void on(Connection db) throws Exception;
    }

    private static void sql(Sql work) {
        try (Connection db = DriverManager.getConnection("jdbc:" + pg.url())) {
            work.on(db);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void thirtyCreatesThroughOneNodeSpreadOverAllThreeAndAnyNodeDestroysThem() {
        LiveServer alpha = NODES.get("alpha");
        List<Placed> placed = new ArrayList<>();
        try {
            for (int i = 0; i < 30; i++) {
                placed.add(create(alpha));
            }
            Map<String, Long> perNode = new TreeMap<>();
            placed.forEach(p -> perNode.merge(p.node(), 1L, Long::sum));
            // best of two on free capacity: with every sandbox alive, no node falls far behind
            assertThat(perNode.keySet()).as("nodes that got creates: %s", perNode).containsExactly("alpha", "beta", "gamma");
            assertThat(perNode.values()).as("creates per node: %s", perNode).allMatch(n -> n >= 6);
            // any node lists them all: each node lists what it holds, and the node asked joins the lists
            JsonNode listed = ok(NODES.get("beta").raw("GET", "/v1/sandboxes", null), 200);
            assertThat(listed.path("sandboxes").valueStream().map(n -> n.path("id").asString()))
                    .containsExactlyInAnyOrderElementsOf(placed.stream().map(Placed::id).toList());
            assertThat(listed.has("partial")).isFalse();
            // each sandbox is held where its answer said: its node describes it, through any node
            for (Placed p : placed) {
                assertThat(ok(NODES.get("gamma").raw("GET", "/v1/sandboxes/" + p.id(), null), 200).path("node").asString())
                        .isEqualTo(p.node());
            }
        } finally {
            for (Placed p : placed) {
                ok(NODES.get("beta").raw("DELETE", "/v1/sandboxes/" + p.id(), null), 204);
            }
        }
        for (Placed p : placed) {
            assertThat(NODES.get("alpha").raw("GET", "/v1/sandboxes/" + p.id(), null).statusCode()).isEqualTo(404);
        }
        sql(db -> {
            try (ResultSet rs = db.createStatement().executeQuery("SELECT count(*) FROM airlock_places")) {
                rs.next();
                assertThat(rs.getLong(1)).as("places left after every sandbox was destroyed").isZero();
            }
        });
    }

    @Test
    void execFilesProcessesAndAPreviewPortThroughANodeThatDoesNotHoldTheSandbox() throws Exception {
        LiveServer alpha = NODES.get("alpha");
        Placed p = elsewhere(alpha, "alpha");
        String sb = "/v1/sandboxes/" + p.id();
        try {
            // files: an upload streamed through, read back, listed
            ok(alpha.raw("PUT", sb + "/files?path=/workspace/site/hello.txt", "hello through alpha"), 201);
            assertThat(alpha.raw("GET", sb + "/files?path=/workspace/site/hello.txt", null).body()).isEqualTo("hello through alpha");
            assertThat(ok(alpha.raw("GET", sb + "/files/list?path=/workspace/site", null), 200).path("entries").get(0).path("path").asString())
                    .isEqualTo("/workspace/site/hello.txt");
            // exec, streamed: each line reaches the client while the process still runs
            String streamed = "{\"command\": [\"sh\", \"-c\", \"echo first; sleep 2; echo second\"]}";
            HttpRequest req = HttpRequest.newBuilder(URI.create(alpha.uri() + sb + "/exec")).header("Authorization", "Bearer " + alpha.token())
                    .header("Accept", "application/x-ndjson").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(streamed)).build();
            HttpResponse<Stream<String>> lines = HTTP.send(req, HttpResponse.BodyHandlers.ofLines());
            assertThat(lines.statusCode()).isEqualTo(200);
            List<String> seen = new ArrayList<>();
            long firstAt = 0;
            long resultAt = 0;
            for (String line : (Iterable<String>) lines.body()::iterator) {
                JsonNode event = JSON.readTree(line);
                String type = event.path("type").asString();
                if (type.equals("stdout") && firstAt == 0) {
                    firstAt = System.nanoTime();
                }
                if (type.equals("result")) {
                    resultAt = System.nanoTime();
                    assertThat(event.path("exitCode").asInt()).isZero();
                }
                if (!type.equals("heartbeat")) {
                    seen.add(type + ":" + event.path("data").asString());
                }
            }
            assertThat(seen).contains("stdout:first\n", "stdout:second\n");
            assertThat(seen.getLast()).startsWith("result:");
            // the sleep lies between the first line's arrival and the result's: the first line was not held back
            assertThat(TimeUnit.NANOSECONDS.toMillis(resultAt - firstAt)).as("ms between the first line and the result").isGreaterThan(1000);
            // a background process: a web server behind a preview port, reached through alpha
            String server = JSON.createObjectNode().put("background", true).set("command", JSON.createArrayNode().add("sh").add("-c")
                    .add("cd /workspace/site && exec python3 -m http.server 8000 --bind 127.0.0.1")).toString();
            String pid = ok(alpha.raw("POST", sb + "/exec", server), 202).path("id").asString();
            assertThat(ok(alpha.raw("GET", sb + "/processes", null), 200).path("processes").valueStream()
                    .map(n -> n.path("id").asString())).contains(pid);
            HttpResponse<String> page = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < deadline) {
                page = alpha.raw("GET", sb + "/ports/8000/hello.txt", null);
                if (page.statusCode() != 502) {
                    break;
                }
                Thread.sleep(200);
            }
            assertThat(page.statusCode()).as(page.body()).isEqualTo(200);
            assertThat(page.body()).isEqualTo("hello through alpha");
            ok(alpha.raw("DELETE", sb + "/processes/" + pid, null), 204);
            // what the node that holds it recorded: the requests, as the client's, through the REST door
            LiveServer holder = NODES.get(p.node());
            assertThat(holder.audit(p.id(), "request")).anySatisfy(r -> {
                assertThat(r.detail()).contains("PUT /v1/sandboxes/{id}/files from node alpha");
                assertThat(r.actor()).contains("local");
            });
        } finally {
            ok(alpha.raw("DELETE", sb, null), 204);
        }
    }

    /**
     * E2B's own SDK through one node's E2B door, on a sandbox that door's create placed on another
     * node: connected to, a command streamed, a file written and read, listed, killed; each request
     * carried out and recorded by the node that holds it, and the envd access token the holder
     * gave honoured by the node the SDK calls.
     */
    /**
     * A node that is up in the cluster's database but never answers (its peer port accepts and says
     * nothing, as a hung node would): a listing through REST and through the E2B door answers all
     * the same, once the ask's bound has passed, with the other nodes' sandboxes, and names it — REST in
     * {@code partial}, the E2B door in its {@code Airlock-Partial} header, E2B's listing having no
     * field for it.
     */
    @Test
    void aNodeThatNeverAnswersIsNamedByTheListingsThatAnswerWithoutIt() throws Exception {
        LiveServer alpha = NODES.get("alpha");
        Placed held = elsewhere(alpha, "alpha");
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
             java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:" + pg.url())) {
            // up for an hour, with no room (so no create is placed there), its peer port the silent socket
            c.createStatement().execute("INSERT INTO airlock_nodes (name, instance, api_address, tiers, capacity, lease_ms, started_at,"
                    + " heartbeat_at, peer_address, peer_sha256) VALUES ('hung', 'hung-1', 'https://127.0.0.1:1', 'container', 0, 3600000, now(),"
                    + " now(), '127.0.0.1:" + silent.getLocalPort() + "', '" + "ab".repeat(32) + "')");
            try {
                // the listing answers once the ask's bound has passed for the silent node (its message says the bound)
                JsonNode listed = ok(alpha.raw("GET", "/v1/sandboxes", null), 200);
                assertThat(listed.path("partial").asString()).contains("hung did not answer within 10 s");
                assertThat(listed.path("sandboxes").valueStream().map(n -> n.path("id").asString())).as("the other nodes' answers")
                        .contains(held.id());

                String door = alpha.server.e2bUri().toString();
                HttpRequest list = HttpRequest.newBuilder(URI.create(door + "/sandboxes"))
                        .header("X-API-Key", dev.airlock.server.e2b.E2bDoor.apiKey(alpha.token())).GET().build();
                HttpResponse<String> e2b = HTTP.send(list, HttpResponse.BodyHandlers.ofString());
                assertThat(e2b.statusCode()).as(e2b.body()).isEqualTo(200);
                assertThat(e2b.headers().firstValue("Airlock-Partial")).as("the E2B door's header").hasValueSatisfying(v ->
                        assertThat(v).contains("hung did not answer"));
                assertThat(JSON.readTree(e2b.body()).valueStream().map(n -> n.path("sandboxID").asString())).contains(held.id());
            } finally {
                c.createStatement().execute("DELETE FROM airlock_nodes WHERE name = 'hung'");
            }
        } finally {
            ok(alpha.raw("DELETE", "/v1/sandboxes/" + held.id(), null), 204);
        }
    }

    @Test
    void e2bsSdkThroughANodeThatDoesNotHoldTheSandbox() throws Exception {
        LiveServer alpha = NODES.get("alpha");
        String door = alpha.server.e2bUri().toString();
        String key = dev.airlock.server.e2b.E2bDoor.apiKey(alpha.token());
        String id = null;
        String node = null;
        for (int i = 0; i < 50 && id == null; i++) {
            JsonNode s = ok(post(HTTP, door + "/sandboxes", Map.of("X-API-Key", key), "{\"templateID\": \"base\", \"timeout\": 300}"), 201);
            String created = s.path("sandboxID").asString();
            node = ok(alpha.raw("GET", "/v1/sandboxes/" + created, null), 200).path("node").asString();
            if (node.equals("alpha")) {
                HttpRequest kill = HttpRequest.newBuilder(URI.create(door + "/sandboxes/" + created)).header("X-API-Key", key).DELETE().build();
                assertThat(HTTP.send(kill, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(204);
            } else {
                id = created;
            }
        }
        assertThat(id).as("50 E2B creates through alpha all stayed there").isNotNull();
        McpNode.install();
        McpNode.Result r = McpNode.run(List.of("node", "e2b-client.mjs", "elsewhere"), Map.of("E2B_API_URL", door, "E2B_SANDBOX_URL", door,
                "E2B_API_KEY", key, "E2B_CLUSTER_SANDBOX", id), Duration.ofMinutes(5));
        assertThat(r.exitCode()).as(r.stderr()).isZero();
        JsonNode s = r.json().path("elsewhere");
        assertThat(s.has("error")).as(s.toString()).isFalse();
        assertThat(s.path("stdout").asString()).isEqualTo("first\nsecond\n");
        assertThat(s.path("chunks").size()).as("streamed as it came, through the node: %s", s.path("chunks")).isGreaterThan(1);
        assertThat(s.path("read").asString()).isEqualTo("written through another node\n");
        assertThat(s.path("seen").asString()).isEqualTo("written through another node\n");
        assertThat(s.path("listed").valueStream().map(JsonNode::asString)).as("alpha's listing joins %s's", node).contains(id);
        assertThat(s.path("killed").asBoolean()).isTrue();
        assertThat(s.path("listedAfter").valueStream().map(JsonNode::asString)).doesNotContain(id);
        // what the node that holds it recorded: the SDK's requests, as the client's, through the E2B door, from alpha
        assertThat(NODES.get(node).audit(id, "request")).anySatisfy(rec -> {
            assertThat(rec.detail()).contains("POST envd /process.Process/Start from node alpha");
            assertThat(rec.actor()).isEqualTo("local@e2b");
        });
    }

    /**
     * A snapshot is named after the node that holds its files ({@code snap-<node>-...}): listed
     * through any node, described, forked and deleted through a node that does not hold it, each
     * carried out by the node that does (the fork is placed there, with the snapshot's files).
     */
    @Test
    void aSnapshotIsListedForkedAndDeletedThroughANodeThatDoesNotHoldIt() {
        LiveServer alpha = NODES.get("alpha");
        Placed p = elsewhere(alpha, "alpha");
        List<String> made = new ArrayList<>(List.of(p.id()));
        try {
            ok(alpha.raw("PUT", "/v1/sandboxes/" + p.id() + "/files?path=/workspace/kept.txt", "kept across nodes"), 201);
            String snap = ok(alpha.raw("POST", "/v1/sandboxes/" + p.id() + "/snapshots", "{}"), 201).path("id").asString();
            assertThat(snap).startsWith("snap-" + p.node() + "-");
            // through the third node, which holds neither the sandbox nor the snapshot
            LiveServer other = NODES.entrySet().stream().filter(e -> !e.getKey().equals("alpha") && !e.getKey().equals(p.node()))
                    .findFirst().orElseThrow().getValue();
            for (LiveServer via : List.of(alpha, other)) {
                assertThat(ok(via.raw("GET", "/v1/snapshots", null), 200).path("snapshots").valueStream().map(n -> n.path("id").asString()))
                        .as("the joined listing").containsOnlyOnce(snap);
                assertThat(ok(via.raw("GET", "/v1/snapshots/" + snap, null), 200).path("sandbox").asString()).isEqualTo(p.id());
            }
            JsonNode forks = ok(other.raw("POST", "/v1/snapshots/" + snap + "/fork", "{\"count\": 1}"), 201);
            JsonNode fork = forks.has("sandboxes") ? forks.path("sandboxes").get(0) : forks;
            made.add(fork.path("id").asString());
            assertThat(fork.path("node").asString()).isEqualTo(p.node());
            assertThat(other.raw("GET", "/v1/sandboxes/" + fork.path("id").asString() + "/files?path=/workspace/kept.txt", null).body())
                    .isEqualTo("kept across nodes");
            ok(other.raw("DELETE", "/v1/snapshots/" + snap, null), 204);
            assertThat(ok(alpha.raw("GET", "/v1/snapshots", null), 200).path("snapshots").valueStream().map(n -> n.path("id").asString()))
                    .doesNotContain(snap);
            assertThat(other.raw("GET", "/v1/snapshots/" + snap, null).statusCode()).isEqualTo(404);
        } finally {
            for (String id : made) {
                if (id != null && !id.isEmpty()) {
                    alpha.raw("DELETE", "/v1/sandboxes/" + id, null);
                }
            }
        }
    }

    /**
     * The MCP door of a node that does not hold a sandbox sends the tool calls that name it to the
     * node that does, which authorizes, records and runs them as its own MCP door would: a file
     * written and read back, the sandbox listed with its node, a command run in it, and the sandbox
     * destroyed, all through alpha's MCP endpoint; the holder's audit log names the session on alpha.
     */
    @Test
    void mcpToolCallsOnASandboxOfAnotherNodeAreCarriedOutByThatNode() {
        LiveServer alpha = NODES.get("alpha");
        Placed p = elsewhere(alpha, "alpha");
        boolean destroyed = false;
        try (McpLoadClient mcp = new McpLoadClient(alpha.uri(), alpha.token(), Duration.ofSeconds(60))) {
            mcp.call("sandbox_write_file", Map.of("sandboxId", p.id(), "path", "notes.txt", "content", "written through alpha's MCP"));
            assertThat(String.valueOf(mcp.call("sandbox_read_file", Map.of("sandboxId", p.id(), "path", "notes.txt"))))
                    .contains("written through alpha's MCP");
            // listed through alpha's MCP door with the node that holds it: every node's sandboxes, as REST's listing
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> listed = (List<Map<String, Object>>) mcp.call("sandbox_list", Map.of()).get("sandboxes");
            assertThat(listed).anySatisfy(s -> {
                assertThat(s.get("sandboxId")).isEqualTo(p.id());
                assertThat(s.get("node")).isEqualTo(p.node());
            });
            Map<String, Object> ran = mcp.call("sandbox_exec", Map.of("sandboxId", p.id(), "command", "cat notes.txt; hostname"));
            assertThat(String.valueOf(ran)).contains("written through alpha's MCP");
            assertThat(ran.get("exitCode")).isEqualTo(0);
            LiveServer holder = NODES.get(p.node());
            assertThat(holder.audit(p.id(), "request")).anySatisfy(r -> {
                assertThat(r.actor()).contains("local").contains("mcp-http:alpha/");
                assertThat(r.detail()).contains("sandbox_exec");
            });
            mcp.call("sandbox_destroy", Map.of("sandboxId", p.id()));
            destroyed = true;
            assertThat(alpha.raw("GET", "/v1/sandboxes/" + p.id(), null).statusCode()).isEqualTo(404);
        } finally {
            if (!destroyed) {
                alpha.raw("DELETE", "/v1/sandboxes/" + p.id(), null);
            }
        }
    }

    /**
     * A terminal's socket relayed to another node, attacked by its client: a message over the
     * terminal's 64 KiB is refused with 1009. (A flood of typing is bounded by the relay's 64
     * waiting messages: TerminalRelayTest, against a node that takes nothing. Here the other node's
     * terminal takes what is typed at whatever speed its tty discards it, so a flood cannot show
     * the bound reliably.)
     */
    /**
     * A snapshot whose node cannot take a fork (draining) is forked on another node, which fetches
     * its files from the node that holds it, each checked against its digest: the fork has them, the
     * copy is never listed, a blob altered on the holder's disk is refused, and a snapshot deleted on
     * its node is not forked from the copy.
     */
    @Test
    void aSnapshotIsForkedElsewhereWhenItsNodeIsDrainingWithItsFilesFetchedAndChecked() throws Exception {
        LiveServer alpha = NODES.get("alpha");
        Placed p = elsewhere(alpha, "alpha");
        String sb = "/v1/sandboxes/" + p.id();
        List<String> made = new ArrayList<>(List.of(p.id()));
        try {
            ok(alpha.raw("PUT", sb + "/files?path=/workspace/moved.txt", "fetched from " + p.node()), 201);
            ok(alpha.raw("PUT", sb + "/files?path=/tmp/also.txt", "and from /tmp"), 201);
            String snap = ok(alpha.raw("POST", sb + "/snapshots", "{}"), 201).path("id").asString();
            ok(alpha.raw("POST", "/v1/cluster/nodes/" + p.node() + "/drain", "{}"), 200);
            JsonNode forks = ok(alpha.raw("POST", "/v1/snapshots/" + snap + "/fork", "{\"count\": 2}"), 201);
            for (JsonNode fork : forks.path("sandboxes")) {
                String id = fork.path("id").asString();
                made.add(id);
                assertThat(fork.path("node").asString()).as("not the draining node that holds the snapshot").isNotEqualTo(p.node());
                assertThat(alpha.raw("GET", "/v1/sandboxes/" + id + "/files?path=/workspace/moved.txt", null).body())
                        .isEqualTo("fetched from " + p.node());
                assertThat(alpha.raw("GET", "/v1/sandboxes/" + id + "/files?path=/tmp/also.txt", null).body()).isEqualTo("and from /tmp");
            }
            assertThat(forks.path("sandboxes").size()).isEqualTo(2);
            for (LiveServer via : NODES.values()) {
                assertThat(ok(via.raw("GET", "/v1/snapshots", null), 200).path("snapshots").valueStream().map(n -> n.path("id").asString()))
                        .as("the copy on the fork's node is not listed").containsOnlyOnce(snap);
            }
            // a blob altered on the holder's disk after the snapshot was taken (larger than a response's buffer, so the holder has
            // sent it before its own check ends): the node that fetches it finds it does not match, and refuses the fork
            String content = "a".repeat(256 * 1024) + System.nanoTime();
            ok(alpha.raw("PUT", sb + "/files?path=/workspace/altered.txt", content), 201);
            String altered = ok(alpha.raw("POST", sb + "/snapshots", "{}"), 201).path("id").asString();
            Path blob = NODES.get(p.node()).dataDir.resolve("snapshots/blobs").resolve(HexFormat.of().formatHex(
                    java.security.MessageDigest.getInstance("SHA-256").digest(content.getBytes(StandardCharsets.UTF_8))));
            assertThat(blob).exists();
            blob.toFile().setWritable(true);
            Files.writeString(blob, content.replace('a', 'e'));
            HttpResponse<String> refused = alpha.raw("POST", "/v1/snapshots/" + altered + "/fork", "{}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(409);
            assertThat(refused.body()).contains(altered).contains("does not match its digest");
            // deleted on its node: the copy fetched before does not make a fork
            ok(alpha.raw("DELETE", "/v1/snapshots/" + snap, null), 204);
            assertThat(alpha.raw("POST", "/v1/snapshots/" + snap + "/fork", "{}").statusCode()).isEqualTo(404);
            ok(alpha.raw("DELETE", "/v1/snapshots/" + altered, null), 204);
        } finally {
            ok(alpha.raw("POST", "/v1/cluster/nodes/" + p.node() + "/drain", "{\"draining\": false}"), 200);
            for (String id : made) {
                alpha.raw("DELETE", "/v1/sandboxes/" + id, null);
            }
        }
    }

    /**
     * Through one node's MCP door, {@code sandbox_create} and {@code run_code} are placed on any
     * node and {@code sandbox_fork} is carried out where the snapshot's files are; the sandboxes a
     * session made on other nodes end with the session, as its own node's do.
     */
    @Test
    @SuppressWarnings("unchecked")
    void mcpCreatesAndForksArePlacedOnAnyNodeAndEndWithTheSessionThatMadeThem() throws Exception {
        LiveServer alpha = NODES.get("alpha");
        List<String> made = new ArrayList<>();
        String snapshot = null;
        try {
            try (McpLoadClient mcp = new McpLoadClient(alpha.uri(), alpha.token(), Duration.ofSeconds(60))) {
                String elsewhere = null;
                String node = null;
                for (int i = 0; i < 50 && elsewhere == null; i++) {
                    String id = (String) mcp.call("sandbox_create", Map.of()).get("sandboxId");
                    made.add(id);
                    String at = ok(alpha.raw("GET", "/v1/sandboxes/" + id, null), 200).path("node").asString();
                    if (!at.equals("alpha")) {
                        elsewhere = id;
                        node = at;
                    }
                }
                assertThat(elsewhere).as("50 MCP creates through alpha all stayed there").isNotNull();
                assertThat(NODES.get(node).audit(elsewhere, null)).anySatisfy(r -> assertThat(r.actor()).contains("local").contains("mcp-http:alpha/"));
                assertThat(String.valueOf(mcp.call("run_code", Map.of("language", "python", "code", "print(6 * 7)")))).contains("42");
                // a snapshot of the other node's sandbox, forked through alpha: made where its files are
                mcp.call("sandbox_write_file", Map.of("sandboxId", elsewhere, "path", "kept.txt", "content", "from the snapshot"));
                snapshot = (String) mcp.call("sandbox_snapshot", Map.of("sandboxId", elsewhere)).get("snapshotId");
                assertThat(snapshot).startsWith("snap-" + node + "-");
                List<Map<String, Object>> forks = (List<Map<String, Object>>) mcp.call("sandbox_fork", Map.of("snapshotId", snapshot, "count", 2))
                        .get("sandboxes");
                assertThat(forks).hasSize(2);
                for (Map<String, Object> fork : forks) {
                    String id = (String) fork.get("sandboxId");
                    made.add(id);
                    assertThat(ok(alpha.raw("GET", "/v1/sandboxes/" + id, null), 200).path("node").asString()).isEqualTo(node);
                    assertThat(mcp.read(id, "kept.txt")).isEqualTo("from the snapshot");
                }
            }
            // the session ended (the SDK's DELETE): what it made, on every node, is destroyed
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            List<String> left = made;
            while (!left.isEmpty() && System.nanoTime() < deadline) {
                left = made.stream().filter(id -> alpha.raw("GET", "/v1/sandboxes/" + id, null).statusCode() != 404).toList();
                Thread.sleep(200);
            }
            assertThat(left).as("sandboxes of the ended session still there").isEmpty();
        } finally {
            for (String id : made) {
                alpha.raw("DELETE", "/v1/sandboxes/" + id, null);
            }
            if (snapshot != null) {
                alpha.raw("DELETE", "/v1/snapshots/" + snapshot, null);
            }
        }
    }

    @Test
    void aRelayedTerminalRefusesAnOversizedMessage() throws Exception {
        LiveServer beta = NODES.get("beta");
        Placed p = elsewhere(beta, "beta");
        try {
            String started = "{\"background\": true, \"tty\": true, \"rows\": 24, \"cols\": 80, \"command\": [\"sleep\", \"600\"]}";
            String pid = ok(beta.raw("POST", "/v1/sandboxes/" + p.id() + "/exec", started), 202).path("id").asString();
            URI attach = URI.create("ws" + beta.uri().toString().substring("http".length()) + "/v1/sandboxes/" + p.id() + "/processes/"
                    + pid + "/attach");

            CompletableFuture<Integer> closedWith = new CompletableFuture<>();
            java.net.http.WebSocket.Listener closes = new java.net.http.WebSocket.Listener() {
                @Override
                public java.util.concurrent.CompletionStage<?> onClose(java.net.http.WebSocket ws, int status, String reason) {
                    closedWith.complete(status);
                    return null;
                }

                @Override
                public void onError(java.net.http.WebSocket ws, Throwable error) {
                    closedWith.completeExceptionally(error);
                }
            };
            java.net.http.WebSocket big = HTTP.newWebSocketBuilder().header("Authorization", "Bearer " + beta.token())
                    .buildAsync(attach, closes).get(30, TimeUnit.SECONDS);
            big.sendBinary(java.nio.ByteBuffer.allocate(64 * 1024 + 1), true);
            assertThat(closedWith.get(30, TimeUnit.SECONDS)).as("close status of an oversized message").isEqualTo(1009);
        } finally {
            ok(beta.raw("DELETE", "/v1/sandboxes/" + p.id(), null), 204);
        }
    }

    @Test
    void anApprovalRequestedThroughOneNodeIsListedAndDecidedOnAnother() throws Exception {
        LiveServer alpha = NODES.get("alpha");
        LiveServer gamma = NODES.get("gamma");
        JsonNode created = ok(alpha.raw("POST", "/v1/sandboxes", "{\"profile\": \"watched\"}"), 201);
        String id = created.path("id").asString();
        String node = created.path("node").asString();
        try {
            CompletableFuture<HttpResponse<String>> exec = CompletableFuture.supplyAsync(() -> alpha.raw("POST", "/v1/sandboxes/" + id + "/exec",
                    "{\"command\": [\"echo\", \"approved\"]}"), java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor());
            // the operator, on gamma, sees it among every node's approvals, named after the node where it waits
            String approval = null;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (approval == null && System.nanoTime() < deadline) {
                for (JsonNode a : ok(gamma.raw("GET", "/v1/approvals", null, OPERATOR), 200).path("approvals")) {
                    if (id.equals(a.path("sandbox").asString()) && a.path("state").asString().equals("pending")) {
                        approval = a.path("id").asString();
                    }
                }
                Thread.sleep(100);
            }
            assertThat(approval).as("the pending approval, listed through gamma").startsWith("ap-" + node + "-");
            ok(gamma.raw("POST", "/v1/approvals/" + approval + "/approve", "{}", OPERATOR), 200);
            HttpResponse<String> done = exec.get(30, TimeUnit.SECONDS);
            assertThat(ok(done, 200).path("stdout").asString()).isEqualTo("approved\n");
            assertThat(ok(gamma.raw("GET", "/v1/approvals/" + approval, null, OPERATOR), 200).path("state").asString()).isEqualTo("approved");
        } finally {
            ok(alpha.raw("DELETE", "/v1/sandboxes/" + id, null), 204);
        }
    }

    /** What a terminal showed. */
    private static final class Screen implements dev.airlock.client.Terminal.Listener {
        private final StringBuilder text = new StringBuilder();

        @Override
        public synchronized void output(byte[] bytes) {
            text.append(new String(bytes, StandardCharsets.UTF_8));
        }

        synchronized String text() {
            return text.toString().replaceAll("\u001b\\[[0-9;?]*[a-zA-Z]", "").replace("\r", "");
        }

        void await(String line) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (java.util.Arrays.stream(text().split("\n")).noneMatch(l -> l.equals(line) || l.equals("$ " + line))) {
                assertThat(System.nanoTime()).as("waiting for the line %s; the terminal shows: %s", line, text()).isLessThan(deadline);
                Thread.sleep(20);
            }
        }
    }

    @Test
    void aTerminalThroughANodeThatDoesNotHoldTheSandbox() throws Exception {
        LiveServer beta = NODES.get("beta");
        Placed p = elsewhere(beta, "beta");
        try {
            dev.airlock.client.RemoteSandbox s = beta.client.get(p.id());
            Screen screen = new Screen();
            dev.airlock.client.Exec shell = dev.airlock.client.Exec.command("bash", "--norc", "--noprofile", "-i").env("PS1", "$ ")
                    .timeout(Duration.ofMinutes(3));
            try (dev.airlock.client.Terminal t = s.startTerminal(shell, 24, 80, screen)) {
                t.write("echo $((6*7))\n");
                screen.await("42");
                t.resize(40, 120);   // a control message (text) crosses too
                t.write("stty size\n");
                screen.await("40 120");
                t.write("exit 3\n");
                var exit = t.awaitExit(Duration.ofSeconds(30));
                assertThat(exit).as(screen.text()).isPresent();
                assertThat(exit.get().exitCode()).isEqualTo(3);
                assertThat(t.closeStatus()).contains(1000);
            }
            // the node that holds it recorded the attach and the detach, as the client's
            LiveServer holder = NODES.get(p.node());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (holder.audit(p.id(), "terminal").stream().noneMatch(r -> r.detail().contains("\"event\":\"detached\""))) {
                assertThat(System.nanoTime()).as("the detach on %s's audit log", p.node()).isLessThan(deadline);
                Thread.sleep(100);
            }
        } finally {
            ok(beta.raw("DELETE", "/v1/sandboxes/" + p.id(), null), 204);
        }
    }

    /** {@code airlock bench --cluster}: three nodes of its own on the same database, each figure beside its baseline. */
    @Test
    void theBenchMeasuresAClusterOfThreeNodesBesideOne() {
        InProcessCli bench = InProcessCli.run("bench", "--quick", "--runs", "3", "--warmup", "0", "--cluster", pg.url(), "--cluster-secret",
                secret.toString(), "--cluster-only");
        assertThat(bench.exit()).as(bench.err()).isZero();
        assertThat(bench.out()).contains("cluster: three nodes on this host", "cluster: creates/s, 1 node", "cluster: creates/s, 3 nodes",
                "cluster: time to first command, 3 nodes", "cluster: exec true, sandbox on another (forwarded)");
        // the forwarded exec's row gives its ratio to the local one's
        assertThat(bench.out().lines().filter(l -> l.contains("(forwarded)")).findFirst().orElseThrow()).matches(".*\\d+\\.\\d\\d$");
        // the bench's nodes left the cluster when it ended
        sql(db -> {
            try (ResultSet rs = db.createStatement().executeQuery("SELECT count(*) FROM airlock_nodes WHERE name LIKE 'bench-%' AND left_at IS NULL")) {
                rs.next();
                assertThat(rs.getLong(1)).isZero();
            }
        });
    }

    /** A node's HMAC over a call, as NodeCalls signs it, with {@code key}. */
    private static String sign(String key, String node, long at, String method, String target, String client, String via) throws Exception {
        Mac m = Mac.getInstance("HmacSHA256");
        m.init(new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        return HexFormat.of().formatHex(m.doFinal(String.join("\n", "airlock-node-call/1", node, Long.toString(at), method, target, client, via)
                .getBytes(StandardCharsets.UTF_8)));
    }

    /** A client that trusts any certificate: the attacker's view of a peer port (it skips the pin, to reach the checks behind it). */
    private static HttpClient anyCertificate() throws Exception {
        SSLContext ctx = SSLContext.getInstance("TLS");
        // an extended trust manager is asked alone, host name included: it accepts everything
        ctx.init(null, new TrustManager[] {new X509ExtendedTrustManager() {
            public void checkClientTrusted(X509Certificate[] chain, String authType) {
            }

            public void checkServerTrusted(X509Certificate[] chain, String authType) {
            }

            public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {
            }

            public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) {
            }

            public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
            }

            public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
            }

            public X509Certificate[] getAcceptedIssuers() {
                return new X509Certificate[0];
            }
        }}, null);
        return HttpClient.newBuilder().sslContext(ctx).build();
    }

    private static HttpResponse<String> get(HttpClient http, String url, Map<String, String> headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url));
        headers.forEach(b::header);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> post(HttpClient client, String url, Map<String, String> headers, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        headers.forEach(b::header);
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void aNodesCallIsRefusedOnTheApiPortAndAClientsTokenOnThePeerPort() throws Exception {
        LiveServer beta = NODES.get("beta");
        String peer = "https://" + peers().get("beta");
        HttpClient tls = anyCertificate();
        String target = "/v1/sandboxes";
        long now = System.currentTimeMillis();
        Map<String, String> signed = Map.of("Airlock-Node", "alpha " + now + " " + sign(SECRET, "alpha", now, "GET", target, "local", "rest"),
                "Airlock-Client", "local", "Airlock-Via", "rest");
        // the signed call is what the peer port takes: the refusals below are of the credential, not of the form
        assertThat(get(tls, peer + target, signed).statusCode()).isEqualTo(200);
        // a node's signed call on a client's route (the API port): refused
        HttpResponse<String> onApi = get(HTTP, beta.uri() + target, signed);
        assertThat(onApi.statusCode()).isEqualTo(401);
        assertThat(onApi.body()).contains("accepted only on a node's peer port");
        // a client's token used as a node's (on the peer port): refused
        HttpResponse<String> token = get(tls, peer + target, Map.of("Authorization", "Bearer " + beta.token()));
        assertThat(token.statusCode()).isEqualTo(401);
        assertThat(token.body()).contains("no client's token");
        assertThat(get(tls, peer + target, Map.of("Authorization", "Bearer " + beta.token(), "Airlock-Client", "local", "Airlock-Via", "rest"))
                .statusCode()).isEqualTo(401);
        // another secret, a stale time, a call signed for another client or path: refused
        String wrong = sign("not-the-cluster-secret-0123456789abcdef", "alpha", now, "GET", target, "local", "rest");
        assertThat(get(tls, peer + target, Map.of("Airlock-Node", "alpha " + now + " " + wrong, "Airlock-Client", "local", "Airlock-Via", "rest"))
                .statusCode()).isEqualTo(401);
        long stale = now - Duration.ofMinutes(5).toMillis();
        assertThat(get(tls, peer + target, Map.of("Airlock-Node", "alpha " + stale + " " + sign(SECRET, "alpha", stale, "GET", target, "local", "rest"),
                "Airlock-Client", "local", "Airlock-Via", "rest")).statusCode()).isEqualTo(401);
        assertThat(get(tls, peer + "/v1/approvals", signed).statusCode()).isEqualTo(401);
        // the MCP tool calls another node's door sends on: taken signed on the peer port only
        String tools = dev.airlock.server.command.NodeRouting.TOOL_CALLS;
        String call = "{\"name\": \"sandbox_list\", \"arguments\": {}, \"session\": \"s1\"}";
        Map<String, String> signedCall = Map.of("Airlock-Node", "alpha " + now + " " + sign(SECRET, "alpha", now, "POST", tools, "local", "mcp-http:s1"),
                "Airlock-Client", "local", "Airlock-Via", "mcp-http:s1");
        HttpResponse<String> listed = post(tls, peer + tools, signedCall, call);
        assertThat(listed.statusCode()).as(listed.body()).isEqualTo(200);
        assertThat(listed.body()).contains("\"sandboxes\"");
        assertThat(post(tls, peer + tools, Map.of("Authorization", "Bearer " + beta.token()), call).statusCode()).isEqualTo(401);
        assertThat(post(tls, peer + tools, signed, call).statusCode()).as("a signature of another call").isEqualTo(401);
        assertThat(post(HTTP, beta.uri() + tools, signedCall, call).statusCode()).isEqualTo(401);
        assertThat(post(HTTP, beta.uri() + tools, Map.of("Authorization", "Bearer " + beta.token()), call).statusCode())
                .as("a client's token on the API port finds no such route").isEqualTo(404);
        // the notice that another node's MCP session ended: taken signed on the peer port only
        String ended = dev.airlock.server.command.NodeRouting.SESSION_ENDED;
        Map<String, String> signedEnd = Map.of("Airlock-Node", "alpha " + now + " " + sign(SECRET, "alpha", now, "POST", ended, "local", "mcp-http:s1"),
                "Airlock-Client", "local", "Airlock-Via", "mcp-http:s1");
        assertThat(post(tls, peer + ended, signedEnd, "{\"session\": \"s1\"}").statusCode()).isEqualTo(204);
        assertThat(post(tls, peer + ended, Map.of("Authorization", "Bearer " + beta.token()), "{\"session\": \"s1\"}").statusCode()).isEqualTo(401);
        assertThat(post(tls, peer + ended, signedCall, "{\"session\": \"s1\"}").statusCode()).as("a signature of another call").isEqualTo(401);
        assertThat(post(HTTP, beta.uri() + ended, signedEnd, "{\"session\": \"s1\"}").statusCode()).isEqualTo(401);
        // a snapshot's files, for another node's fork: signed on the peer port only
        String snapshot = dev.airlock.server.command.NodeRouting.SNAPSHOTS + "/snap-beta-0123456789abcdef";
        assertThat(get(tls, peer + snapshot, Map.of("Airlock-Node", "alpha " + now + " " + sign(SECRET, "alpha", now, "GET", snapshot, "local", "rest"),
                "Airlock-Client", "local", "Airlock-Via", "rest")).statusCode()).as("signed: no such snapshot").isEqualTo(404);
        assertThat(get(tls, peer + snapshot, Map.of("Authorization", "Bearer " + beta.token())).statusCode()).isEqualTo(401);
        assertThat(get(tls, peer + snapshot + "/blobs/" + "0".repeat(64), signed).statusCode()).as("a signature of another call").isEqualTo(401);
        assertThat(get(HTTP, beta.uri() + snapshot, Map.of("Authorization", "Bearer " + beta.token())).statusCode()).isEqualTo(404);
        // the E2B door's requests another node sends on: taken signed for the E2B door only, never with a client's key or token
        String e2b = dev.airlock.server.command.NodeRouting.E2B_DOOR + "/sandboxes";
        Map<String, String> signedE2b = Map.of("Airlock-Node", "alpha " + now + " " + sign(SECRET, "alpha", now, "GET", e2b, "local", "e2b"),
                "Airlock-Client", "local", "Airlock-Via", "e2b");
        HttpResponse<String> e2bListed = get(tls, peer + e2b, signedE2b);
        assertThat(e2bListed.statusCode()).as(e2bListed.body()).isEqualTo(200);
        assertThat(e2bListed.body()).startsWith("[");
        String e2bKey = dev.airlock.server.e2b.E2bDoor.apiKey(beta.token());
        assertThat(get(tls, peer + e2b, Map.of("X-API-Key", e2bKey)).statusCode()).isEqualTo(401);
        assertThat(get(tls, peer + e2b, Map.of("X-API-Key", e2bKey, "Airlock-Client", "local", "Airlock-Via", "e2b")).statusCode()).isEqualTo(401);
        assertThat(get(tls, peer + e2b, Map.of("Airlock-Node", "alpha " + now + " " + sign(SECRET, "alpha", now, "GET", e2b, "local", "rest"),
                "Airlock-Client", "local", "Airlock-Via", "rest")).statusCode()).as("signed for the REST door").isEqualTo(401);
        assertThat(get(tls, peer + e2b, signed).statusCode()).as("a signature of another call").isEqualTo(401);
        HttpResponse<String> onDoor = get(HTTP, beta.server.e2bUri() + "/sandboxes", signedE2b);
        assertThat(onDoor.statusCode()).as("a node's call on the E2B door's own port").isEqualTo(401);
        assertThat(get(HTTP, beta.server.e2bUri() + e2b, signedE2b).statusCode()).isEqualTo(401);
        // the peer port speaks TLS only: plain HTTP gets no API
        HttpResponse<String> plain = null;
        try {
            plain = get(HTTP, "http://" + peers().get("beta") + target, signed);
        } catch (IOException refused) {
            // the TLS side closed the plain connection
        }
        assertThat(plain == null || plain.statusCode() == 400).as("plain HTTP on the peer port: %s", plain == null ? null : plain.body()).isTrue();
    }

    /** A server on a free port that records the first bytes each connection sends and answers nothing useful. */
    private static final class Recorder implements AutoCloseable {
        final ServerSocket socket;
        final ByteArrayOutputStream got = new ByteArrayOutputStream();
        final Thread accepting;

        Recorder(ServerSocket socket, boolean tls) {
            this.socket = socket;
            this.accepting = Thread.ofPlatform().daemon().start(() -> {
                while (!socket.isClosed()) {
                    try (Socket s = socket.accept()) {
                        s.setSoTimeout(5000);
                        if (tls) {
                            ((javax.net.ssl.SSLSocket) s).startHandshake();
                        }
                        InputStream in = s.getInputStream();
                        byte[] buf = new byte[4096];
                        int n = in.read(buf);
                        if (n > 0) {
                            synchronized (got) {
                                got.write(buf, 0, n);
                            }
                        }
                        if (!tls) {
                            s.getOutputStream().write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".getBytes(StandardCharsets.US_ASCII));
                        }
                    } catch (IOException e) {
                        // a handshake the client broke off, or the socket closed
                    }
                }
            });
        }

        String seen() {
            synchronized (got) {
                return got.toString(StandardCharsets.ISO_8859_1);
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
            try {
                accepting.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Registers node {@code name} at {@code address} with {@code fingerprint}, holding sandbox {@code sandbox}. */
    private static void impostor(String name, String address, String fingerprint, String sandbox) {
        sql(db -> {
            try (PreparedStatement node = db.prepareStatement("INSERT INTO airlock_nodes (name, instance, api_address, tiers, capacity, lease_ms,"
                    + " started_at, heartbeat_at, peer_address, peer_sha256) VALUES (?, 'x', 'http://nowhere', 'container', 0, 600000, now(), now(), ?, ?)");
                 PreparedStatement place = db.prepareStatement("INSERT INTO airlock_places (id, node, client, created_at, sandbox)"
                         + " VALUES (?, ?, 'local', now(), ?)")) {
                node.setString(1, name);
                node.setString(2, address);
                node.setString(3, fingerprint);
                node.executeUpdate();
                place.setString(1, "place-" + name);
                place.setString(2, name);
                place.setString(3, sandbox);
                place.executeUpdate();
            }
        });
    }

    private static void forget(String name) {
        sql(db -> {
            try (PreparedStatement p = db.prepareStatement("DELETE FROM airlock_places WHERE node = ?");
                 PreparedStatement n = db.prepareStatement("DELETE FROM airlock_nodes WHERE name = ?")) {
                p.setString(1, name);
                p.executeUpdate();
                n.setString(1, name);
                n.executeUpdate();
            }
        });
    }

    @Test
    void aPeerThatIsPlainHttpOrWhoseCertificateIsNotTheOneItPublishedGetsNoRequest() throws Exception {
        LiveServer alpha = NODES.get("alpha");
        // the certificate beta published, pinned for an impostor that serves another one
        String[] pin = new String[1];
        sql(db -> {
            try (ResultSet rs = db.createStatement().executeQuery("SELECT peer_sha256 FROM airlock_nodes WHERE name = 'beta'")) {
                rs.next();
                pin[0] = rs.getString(1);
            }
        });
        assertThat(pin[0]).hasSize(64);
        dev.airlock.server.cluster.NodeTls other = dev.airlock.server.cluster.NodeTls.create("impostor");
        var factory = other.serverContext();
        factory.start();
        SSLServerSocket tlsSocket = (SSLServerSocket) factory.getSslContext().getServerSocketFactory().createServerSocket(0, 50,
                InetAddress.getLoopbackAddress());
        try (Recorder tlsImpostor = new Recorder(tlsSocket, true);
             Recorder plainImpostor = new Recorder(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()), false)) {
            impostor("impostor-tls", "127.0.0.1:" + tlsSocket.getLocalPort(), pin[0], "sb-held-by-impostor-tls");
            impostor("impostor-plain", "127.0.0.1:" + plainImpostor.socket.getLocalPort(), pin[0], "sb-held-by-impostor-plain");
            for (String sandbox : List.of("sb-held-by-impostor-tls", "sb-held-by-impostor-plain")) {
                HttpResponse<String> r = alpha.raw("GET", "/v1/sandboxes/" + sandbox, null);
                assertThat(r.statusCode()).as(r.body()).isEqualTo(503);
                assertThat(r.body()).contains("over TLS with its published certificate");
            }
            // neither got a byte of the request: no path, no client, no signature
            assertThat(tlsImpostor.seen()).isEmpty();
            assertThat(plainImpostor.seen()).doesNotContain("Airlock-Node", "/v1/sandboxes", "local");
            assertThat(plainImpostor.seen()).isNotEmpty().startsWith("\u0016");   // a TLS ClientHello, nothing else
        } finally {
            factory.stop();
            forget("impostor-tls");
            forget("impostor-plain");
        }
    }

    /**
     * A node that died since its last heartbeat is still "up" for a lease: a create placed on it is
     * made by the node asked instead (nothing was sent to the dead one), not refused.
     */
    @Test
    void aCreatePlacedOnANodeThatCannotBeReachedIsMadeByTheNodeAsked() {
        impostor("dead-node", "127.0.0.1:1", "00", "sb-of-the-dead-node");
        sql(db -> db.createStatement().executeUpdate("UPDATE airlock_nodes SET capacity = 100000 WHERE name = 'dead-node'"));
        LiveServer alpha = NODES.get("alpha");
        // beta and gamma drained: every placement compares alpha with the dead node, which looks far freer
        ok(alpha.raw("POST", "/v1/cluster/nodes/beta/drain", "{\"draining\": true}"), 200);
        ok(alpha.raw("POST", "/v1/cluster/nodes/gamma/drain", "{\"draining\": true}"), 200);
        List<String> made = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                Placed p = create(alpha);
                made.add(p.id());
                assertThat(p.node()).isEqualTo("alpha");
            }
        } finally {
            made.forEach(id -> ok(alpha.raw("DELETE", "/v1/sandboxes/" + id, null), 204));
            ok(alpha.raw("POST", "/v1/cluster/nodes/beta/drain", "{\"draining\": false}"), 200);
            ok(alpha.raw("POST", "/v1/cluster/nodes/gamma/drain", "{\"draining\": false}"), 200);
            forget("dead-node");
        }
    }

    @Test
    void aSandboxWhoseNodeIsDownIsLost() {
        impostor("gone-node", "127.0.0.1:1", "00", "sb-on-a-gone-node");
        try {
            sql(db -> db.createStatement().executeUpdate("UPDATE airlock_nodes SET heartbeat_at = now() - interval '1 hour' WHERE name = 'gone-node'"));
            HttpResponse<String> r = NODES.get("gamma").raw("GET", "/v1/sandboxes/sb-on-a-gone-node", null);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(410);
            assertThat(JSON.readTree(r.body()).path("error").path("message").asString())
                    .contains("sandbox sb-on-a-gone-node is lost", "node 'gone-node'", "is down");
            // another client learns nothing of it: 404 as for any id it does not hold, and not in its list
            HttpResponse<String> foreign = NODES.get("gamma").raw("GET", "/v1/sandboxes/sb-on-a-gone-node", null, OTHER);
            assertThat(foreign.statusCode()).as(foreign.body()).isEqualTo(404);
            assertThat(foreign.body()).contains("does not exist").doesNotContain("lost", "node 'gone-node'");
            assertThat(ok(NODES.get("gamma").raw("GET", "/v1/sandboxes", null, OTHER), 200).path("sandboxes").valueStream()
                    .map(n -> n.path("id").asString())).doesNotContain("sb-on-a-gone-node");
            // listed as lost, through any node, until its node returns
            JsonNode listed = ok(NODES.get("alpha").raw("GET", "/v1/sandboxes", null), 200);
            assertThat(listed.path("sandboxes").valueStream().filter(n -> n.path("id").asString().equals("sb-on-a-gone-node")))
                    .singleElement().satisfies(n -> {
                        assertThat(n.path("state").asString()).isEqualTo("lost");
                        assertThat(n.path("node").asString()).isEqualTo("gone-node");
                    });
        } finally {
            forget("gone-node");
        }
    }
}
