package dev.airlock.it;

import dev.airlock.core.AirlockException;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ClusterSettings;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Nodes of a cluster on a real PostgreSQL (docs/cluster.md): they register and heartbeat, every
 * node lists them all, a node is drained from any other, a killed node is counted down after its
 * lease and frees its name, a stopped one is marked left; a node with another secret or a name a
 * running node holds is refused, and a server that runs alone says so.
 */
class ClusterNodesTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final java.net.http.HttpClient HTTP = java.net.http.HttpClient.newHttpClient();
    private static final Duration LEASE = Duration.ofSeconds(2);
    /** How long the catalog keeps a down node's sandboxes here (an hour by default). */
    private static final Duration LOST_KEPT = Duration.ofSeconds(3);
    /** The same policy on every node, as a cluster needs: client {@code local} (each node's own token) may hold 2 sandboxes. */
    private static final String POLICY = """
            profiles:
              default: {}
            clients:
              local: {tokenFile: token, profiles: [default], allow: ["*"], quotas: {sandboxes: 2}}
            """;

    private static Postgres pg;
    private static Path secret;
    private static LiveServer alpha;
    private static LiveServer beta;
    /** The data and state directories of the nodes run as processes of their own: removed once the class is done with them. */
    private static final List<Path> NODE_DIRS = new java.util.concurrent.CopyOnWriteArrayList<>();

    @BeforeAll
    static void start() throws IOException {
        pg = Postgres.start();
        secret = secretFile("cluster-secret-for-the-tests-0123456789abcdef");
        alpha = LiveServer.withPolicy(POLICY, c -> c.withPoolSize(0).withE2bPort(ServerConfig.E2B_OFF).withCluster(node("alpha")));
        beta = LiveServer.withPolicy(POLICY, c -> c.withPoolSize(0).withE2bPort(ServerConfig.E2B_OFF).withCluster(node("beta")));
    }

    /** The servers first, then the directories of the nodes run as processes: each step runs whatever the one before threw. */
    @AfterAll
    static void stop() {
        AssertionError failed = null;
        for (AutoCloseable c : new AutoCloseable[] {alpha, beta, pg}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception | AssertionError e) {
                failed = failed == null ? new AssertionError(e) : failed;
            }
        }
        for (Path dir : NODE_DIRS) {
            try {
                dev.airlock.core.HostFiles.deleteTree(dir);
            } catch (RuntimeException e) {
                failed = failed == null ? new AssertionError(e) : failed;
            }
        }
        if (failed != null) {
            throw failed;
        }
    }

    private static ClusterSettings node(String name) {
        return new ClusterSettings(pg.url(), name, secret, LEASE, 0, LOST_KEPT);
    }

    private static Path secretFile(String content) throws IOException {
        Path f = Files.createTempFile("airlock-cluster-secret", "");
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        Files.writeString(f, content);
        f.toFile().deleteOnExit();
        return f;
    }

    private static Map<String, JsonNode> nodes(LiveServer via) {
        HttpResponse<String> r = via.raw("GET", "/v1/cluster/nodes", null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body()).path("nodes").valueStream().collect(Collectors.toMap(n -> n.path("name").asString(), n -> n));
    }

    private static JsonNode drain(LiveServer via, String node, boolean draining, int status) {
        HttpResponse<String> r = via.raw("POST", "/v1/cluster/nodes/" + node + "/drain", "{\"draining\": " + draining + "}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return JSON.readTree(r.body());
    }

    @Test
    void everyNodeListsTheClusterWithEachNodesAddressTiersAndState() {
        for (LiveServer via : List.of(alpha, beta)) {
            Map<String, JsonNode> nodes = nodes(via);
            assertThat(nodes).containsKeys("alpha", "beta");
            JsonNode a = nodes.get("alpha");
            assertThat(a.path("state").asString()).isEqualTo("up");
            assertThat(a.path("apiAddress").asString()).isEqualTo(alpha.uri().toString());
            assertThat(a.path("tiers").valueStream().map(JsonNode::asString)).contains("container");
            assertThat(a.path("capacity").asInt()).isEqualTo(ServerConfig.defaults().maxSandboxes());
            assertThat(a.path("self").asBoolean()).isEqualTo(via == alpha);
            assertThat(nodes.get("beta").path("apiAddress").asString()).isEqualTo(beta.uri().toString());
        }
    }

    /** The operator's commands: {@code airlock cluster nodes} and {@code drain} through a node's API. */
    @Test
    void theCliListsTheNodesAndDrainsOne() {
        String[] connection = {"--url", alpha.uri().toString(), "--token-file", alpha.dataDir.resolve("token").toString()};
        InProcessCli nodes = InProcessCli.run(concat(new String[] {"cluster", "nodes"}, connection));
        assertThat(nodes.exit()).as(nodes.err()).isZero();
        assertThat(nodes.out()).contains("NODE", "alpha *", "beta", alpha.uri().toString(), "container", "/200");
        InProcessCli drained = InProcessCli.run(concat(new String[] {"cluster", "drain", "beta"}, connection));
        assertThat(drained.out()).isEqualTo("beta: draining\n");
        InProcessCli resumed = InProcessCli.run(concat(new String[] {"cluster", "drain", "beta", "--undo"}, connection));
        assertThat(resumed.out()).isEqualTo("beta: up\n");
        InProcessCli missing = InProcessCli.run(concat(new String[] {"cluster", "drain", "nobody"}, connection));
        assertThat(missing.exit()).isEqualTo(2);
        assertThat(missing.err()).contains("no node 'nobody'");
    }

    private static String[] concat(String[] a, String[] b) {
        return java.util.stream.Stream.concat(java.util.Arrays.stream(a), java.util.Arrays.stream(b)).toArray(String[]::new);
    }

    @Test
    void aNodeIsDrainedFromAnotherAndResumed() {
        assertThat(drain(alpha, "beta", true, 200).path("state").asString()).isEqualTo("draining");
        assertThat(nodes(beta).get("beta").path("state").asString()).as("beta sees it too").isEqualTo("draining");
        assertThat(drain(beta, "beta", false, 200).path("state").asString()).isEqualTo("up");
        JsonNode missing = drain(alpha, "no-such-node", true, 404);
        assertThat(missing.path("error").path("message").asString()).contains("no node 'no-such-node'", "airlock cluster nodes");
    }

    @Test
    void aNodeWithAnotherSecretOrARunningNodesNameIsRefused() throws IOException {
        Path other = secretFile("another-secret-that-is-not-the-cluster-one-0123");
        assertThatThrownBy(() -> startNode(new ClusterSettings(pg.url(), "delta", other, LEASE, 0)))
                .isInstanceOf(AirlockException.class).hasMessageContaining("is not the cluster's");
        assertThatThrownBy(() -> startNode(node("beta")))
                .isInstanceOf(AirlockException.class).hasMessageContaining("node name 'beta' is held by a running node");
        assertThat(nodes(alpha)).doesNotContainKey("delta");
        // a secret others may read is refused before anything is reached
        Path open = secretFile("cluster-secret-for-the-tests-0123456789abcdef");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> startNode(new ClusterSettings(pg.url(), "delta", open, LEASE, 0)))
                .isInstanceOf(AirlockException.class).hasMessageContaining("chmod 600");
        assertThatThrownBy(() -> startNode(new ClusterSettings("postgresql://127.0.0.1:1/none?user=x&password=hidden", "delta", secret, LEASE, 0)))
                .isInstanceOf(AirlockException.class).hasMessageContaining("cannot reach the cluster's database postgresql://127.0.0.1:1/none")
                .hasMessageNotContaining("hidden");
        // a peer port another process holds: the option to change it is named
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            assertThatThrownBy(() -> startNode(new ClusterSettings(pg.url(), "delta", secret, LEASE, taken.getLocalPort())))
                    .isInstanceOf(AirlockException.class).hasMessageContaining("that is the cluster's peer port: give it another with --cluster-port");
        }
        JsonNode delta = nodes(alpha).get("delta");
        assertThat(delta == null || delta.path("state").asString().equals("left")).as("a node whose start failed has left: %s", delta).isTrue();
    }

    /**
     * A node publishes its audit log's head in the database every lease and as it leaves; {@code
     * airlock audit verify --cluster} checks the log against them. Whoever holds the node's host can
     * rewrite a record and recompute the chain after it, which the log's own check cannot see: the
     * heads published before can. Records cut from the end leave a head past the last one.
     */
    @Test
    void aNodesAuditLogIsCheckedAgainstTheHeadsItPublishedInTheDatabase() throws Exception {
        Path dir = Files.createTempDirectory("airlock-anchors-");
        NODE_DIRS.add(dir);
        Files.writeString(dir.resolve("policy.yaml"), POLICY);
        try (AirlockServer delta = AirlockServer.start(ServerConfig.defaults().withPort(0).withE2bPort(ServerConfig.E2B_OFF).withDataDir(dir)
                .withPoolSize(0).withPolicyFile(dir.resolve("policy.yaml")).withCluster(node("delta")))) {
            // alpha and beta drained meanwhile, so that delta's creates are placed on it and written in its log
            drain(alpha, "alpha", true, 200);
            drain(alpha, "beta", true, 200);
            try {
                createAndDestroy(delta, 3);
            } finally {
                drain(alpha, "alpha", false, 200);
                drain(alpha, "beta", false, 200);
            }

            // while it runs: the head it has written (the records of the requests above, once they are) is published within a
            // lease and a heartbeat
            long head = 0;
            for (long end = System.nanoTime() + Duration.ofSeconds(10).toNanos(); head == 0 && System.nanoTime() < end; Thread.sleep(100)) {
                assertThat(delta.audit().flush(5000)).isTrue();
                head = delta.audit().head().seq();
            }
            assertThat(head).as("records of the creates written").isPositive();
            long end = System.nanoTime() + LEASE.plusSeconds(5).toNanos();
            long published = 0;
            while (published < head && System.nanoTime() < end) {
                Thread.sleep(100);
                try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:" + pg.url());
                     java.sql.ResultSet rs = c.createStatement().executeQuery("SELECT coalesce(max(seq), 0) FROM airlock_audit_anchors WHERE node = 'delta'")) {
                    rs.next();
                    published = rs.getLong(1);
                }
            }
            assertThat(published).as("the newest head published while the node runs").isGreaterThanOrEqualTo(head);
        }
        String[] verify = {"audit", "verify", "--data-dir", dir.toString(), "--cluster", pg.url(), "--node-name", "delta"};
        InProcessCli whole = InProcessCli.run(verify);
        assertThat(whole.exit()).as(whole.out() + whole.err()).isZero();
        assertThat(whole.out()).contains("audit log intact", "it matches the", "anchors node 'delta' published in the cluster");

        // a record changed and the chain after it recomputed: the log's own check passes, the published heads do not
        Path db = dir.resolve(ServerConfig.DATABASE);
        Path original = dir.resolve("original.db");
        Files.copy(db, original);
        try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + db)) {
            List<dev.airlock.server.audit.AuditRecord> all;
            try (dev.airlock.server.audit.AuditReader reader = dev.airlock.server.audit.AuditReader.open(db)) {
                all = reader.query(new dev.airlock.server.audit.AuditReader.Query(null, null, null, 0));
            }
            String prev = all.get(1).prevHash();
            try (java.sql.PreparedStatement ps = c.prepareStatement("UPDATE audit SET detail = ?, prev_hash = ?, hash = ? WHERE seq = ?")) {
                for (int i = 1; i < all.size(); i++) {
                    dev.airlock.server.audit.AuditRecord r = all.get(i);
                    String detail = i == 1 ? r.detail().replace("}", ",\"forged\":true}") : r.detail();
                    String hash = new dev.airlock.server.audit.AuditRecord(r.seq(), r.time(), r.kind(), r.actor(), r.sandbox(), detail, prev, null)
                            .computeHash();
                    ps.setString(1, detail);
                    ps.setString(2, prev);
                    ps.setString(3, hash);
                    ps.setLong(4, r.seq());
                    ps.executeUpdate();
                    prev = hash;
                }
            }
            InProcessCli alone = InProcessCli.run("audit", "verify", "--data-dir", dir.toString());
            assertThat(alone.exit()).as("the rewritten chain verifies on its own: " + alone.out()).isZero();
            InProcessCli rewritten = InProcessCli.run(verify);
            assertThat(rewritten.exit()).as(rewritten.out()).isEqualTo(1);
            assertThat(rewritten.out()).contains("audit log BROKEN at seq", "against the cluster's anchors of node 'delta'",
                    "but the node published", "the log was rewritten");
        }
        // the log as it was, its two newest records cut (the chain that is left is whole): the last head published is past it
        Files.copy(original, db, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:sqlite:" + db); java.sql.Statement st = c.createStatement()) {
            st.executeUpdate("DELETE FROM audit WHERE seq > (SELECT max(seq) - 2 FROM audit)");
        }
        InProcessCli cut = InProcessCli.run(verify);
        assertThat(cut.exit()).as(cut.out()).isEqualTo(1);
        assertThat(cut.out()).contains("past this log's last record, seq " + (Long.parseLong(whole.out()
                .replaceAll("(?s).*audit log intact: (\\d+) records.*", "$1")) - 2), "records were cut from its end");

        InProcessCli nobody = InProcessCli.run("audit", "verify", "--data-dir", dir.toString(), "--cluster", pg.url(), "--node-name", "nobody");
        assertThat(nobody.exit()).isEqualTo(2);
        assertThat(nobody.err()).contains("holds no audit anchors of node 'nobody'");
    }

    /**
     * The cluster-wide duty (removing from the catalog the sandboxes of a node down for longer than
     * its lease and {@code --cluster-lost-kept}) runs on one node at a time, the holder of a lease in
     * the database. A holder that goes silent loses it once it runs out; the node that takes it over
     * gets the next fencing token, and while another instance holds the lease no live node does the
     * duty.
     */
    @Test
    void oneNodeAtATimeRunsTheClustersDutiesUnderAFencedLease() throws Exception {
        try (java.sql.Connection c = java.sql.DriverManager.getConnection("jdbc:" + pg.url())) {
            // a node down for an hour, with two sandboxes still in the catalog
            sql(c, "INSERT INTO airlock_nodes (name, instance, api_address, tiers, capacity, lease_ms, started_at, heartbeat_at)"
                    + " VALUES ('ghost', 'ghost-1', 'http://192.0.2.1:7700', 'container', 10, 2000, now() - interval '2 hours',"
                    + " now() - interval '1 hour')");
            String places = "INSERT INTO airlock_places (id, node, client, created_at, sandbox) VALUES"
                    + " (gen_random_uuid()::text, 'ghost', 'local', now(), 'al-ghost-1'), (gen_random_uuid()::text, 'ghost', 'local', now(), 'al-ghost-2')";
            sql(c, places);
            try {
                awaitQuery(c, "SELECT count(*) FROM airlock_places WHERE node = 'ghost'", "0", LEASE.plusSeconds(5));
                String holder = query(c, "SELECT holder FROM airlock_duties WHERE name = 'duties'");
                assertThat(holder).as("the node that runs the duties").isIn("alpha", "beta");
                long token = Long.parseLong(query(c, "SELECT token FROM airlock_duties WHERE name = 'duties'"));
                assertThat(token).isPositive();
                String liveInstance = query(c, "SELECT instance FROM airlock_duties WHERE name = 'duties'");

                // the lease taken by another instance (a node that then went silent): no live node does the duty while it lasts
                sql(c, "UPDATE airlock_duties SET holder = 'ghost', instance = 'ghost-1', token = token + 1, expires_at = now() + interval '1 hour'");
                sql(c, places);
                Thread.sleep(LEASE.toMillis() * 2);
                assertThat(query(c, "SELECT count(*) FROM airlock_places WHERE node = 'ghost'")).as("places kept while the lease is another's")
                        .isEqualTo("2");
                // the holder that lost it, its duty's statement arriving late (paused, partitioned): fenced, it changes nothing;
                // nor does the new holder's instance with the old token
                assertThat(dev.airlock.server.cluster.ClusterMembership.removeLostPlaces(c, liveInstance, token, Duration.ZERO)).isZero();
                assertThat(dev.airlock.server.cluster.ClusterMembership.removeLostPlaces(c, "ghost-1", token, Duration.ZERO)).isZero();
                assertThat(query(c, "SELECT count(*) FROM airlock_places WHERE node = 'ghost'")).isEqualTo("2");

                // its lease runs out: a live node takes it over with the next token, and does the duty
                sql(c, "UPDATE airlock_duties SET expires_at = now() - interval '1 millisecond'");
                awaitQuery(c, "SELECT count(*) FROM airlock_places WHERE node = 'ghost'", "0", LEASE.plusSeconds(5));
                assertThat(query(c, "SELECT holder FROM airlock_duties WHERE name = 'duties'")).isIn("alpha", "beta");
                assertThat(Long.parseLong(query(c, "SELECT token FROM airlock_duties WHERE name = 'duties'"))).isEqualTo(token + 2);
            } finally {
                sql(c, "DELETE FROM airlock_places WHERE node = 'ghost'");
                sql(c, "DELETE FROM airlock_nodes WHERE name = 'ghost'");
            }
        }
    }

    private static void sql(java.sql.Connection c, String sql) throws java.sql.SQLException {
        try (java.sql.Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    private static String query(java.sql.Connection c, String sql) throws java.sql.SQLException {
        try (java.sql.Statement st = c.createStatement(); java.sql.ResultSet rs = st.executeQuery(sql)) {
            return rs.next() ? rs.getString(1) : null;
        }
    }

    private static void awaitQuery(java.sql.Connection c, String sql, String expected, Duration within) throws Exception {
        long end = System.nanoTime() + within.toNanos();
        String seen = query(c, sql);
        while (!expected.equals(seen) && System.nanoTime() < end) {
            Thread.sleep(100);
            seen = query(c, sql);
        }
        assertThat(seen).as(sql).isEqualTo(expected);
    }

    /** Creates and destroys {@code n} sandboxes through {@code node}'s REST API, one after the other. */
    private static void createAndDestroy(AirlockServer node, int n) throws IOException, InterruptedException {
        for (int i = 0; i < n; i++) {
            HttpResponse<String> created = HTTP.send(java.net.http.HttpRequest.newBuilder(node.uri().resolve("/v1/sandboxes"))
                    .header("Authorization", "Bearer " + node.token()).header("Content-Type", "application/json")
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
            String id = JSON.readTree(created.body()).path("id").asString();
            assertThat(HTTP.send(java.net.http.HttpRequest.newBuilder(node.uri().resolve("/v1/sandboxes/" + id))
                    .header("Authorization", "Bearer " + node.token()).DELETE().build(), HttpResponse.BodyHandlers.ofString())
                    .statusCode()).isEqualTo(204);
        }
    }

    private static void startNode(ClusterSettings cluster) throws IOException {
        Path dir = Files.createTempDirectory("airlock-e2e-");
        try {
            AirlockServer.start(ServerConfig.defaults().withPort(0).withE2bPort(ServerConfig.E2B_OFF).withDataDir(dir).withPoolSize(0)
                    .withCluster(cluster)).close();
        } finally {
            dev.airlock.core.HostFiles.deleteTree(dir);
        }
    }

    /**
     * A node killed with SIGKILL (its own process, {@code airlock serve --cluster}, with the same
     * policy) says nothing: the others count it down once its last heartbeat is older than its lease,
     * the quota its sandboxes held is free again then, and so is its name; restarted, it reaps what
     * it left. A node that stops is marked left at once.
     */
    @Test
    void aKilledNodeIsDownAfterItsLeaseAndAStoppedOneHasLeft() throws Exception {
        Path log = Files.createTempFile("airlock-serve-gamma", ".log");
        log.toFile().deleteOnExit();
        // short: each sandbox's unix sockets lie 72 bytes below the state directory, within the kernel's 107
        Path dir = Files.createTempDirectory(Path.of("/tmp"), "al-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));   // sandboxes pass through it to their root
        NODE_DIRS.add(dir);
        Files.writeString(dir.resolve("policy.yaml"), POLICY);
        Process gamma = serve("gamma", dir, log);
        try {
            awaitState("gamma", "up", Duration.ofSeconds(60), log);
            // gamma takes the client's whole quota (alpha and beta drained meanwhile, so its creates stay on it): alpha may create none
            drain(alpha, "alpha", true, 200);
            drain(alpha, "beta", true, 200);
            String api = nodes(alpha).get("gamma").path("apiAddress").asString();
            String token = Files.readString(dir.resolve("token")).strip();
            for (int i = 0; i < 2; i++) {
                HttpResponse<String> r = HTTP.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(api + "/v1/sandboxes"))
                        .header("Authorization", "Bearer " + token).header("Content-Type", "application/json")
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
            }
            drain(alpha, "alpha", false, 200);
            drain(alpha, "beta", false, 200);
            assertThat(alpha.raw("POST", "/v1/sandboxes", "{}").statusCode()).isEqualTo(429);
            gamma.destroyForcibly();
            gamma.waitFor(10, TimeUnit.SECONDS);
            // within its lease and a heartbeat of the killing, with room for a loaded host
            awaitState("gamma", "down", LEASE.plusSeconds(5), log);
            HttpResponse<String> freed = alpha.raw("POST", "/v1/sandboxes", "{}");
            assertThat(freed.statusCode()).as("the quota a node that is down held: " + freed.body()).isEqualTo(201);
            assertThat(alpha.raw("DELETE", "/v1/sandboxes/" + JSON.readTree(freed.body()).path("id").asString(), null).statusCode())
                    .isEqualTo(204);
        } finally {
            gamma.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            drain(alpha, "alpha", false, 200);
            drain(alpha, "beta", false, 200);
        }
        // its name is free: a new gamma joins on the same state directory (reaping what the killed one left there, as a
        // restarted node does), then stops cleanly
        Process again = serve("gamma", dir, log);
        try {
            awaitState("gamma", "up", Duration.ofSeconds(60), log);
            again.destroy();   // SIGTERM: the server stops as a service does
            assertThat(again.waitFor(60, TimeUnit.SECONDS)).isTrue();
            awaitState("gamma", "left", Duration.ofSeconds(5), log);
        } finally {
            again.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static Process serve(String name, Path dir, Path log) throws IOException {
        List<String> command = List.of(ProcessHandle.current().info().command().orElse("java"), "-cp", System.getProperty("java.class.path"),
                dev.airlock.cli.AirlockCli.class.getName(), "serve", "--port", "0", "--e2b-port", "0", "--data-dir", dir.toString(),
                "--state-dir", dir.resolve("state").toString(),
                "--pool-size", "0", "--policy", dir.resolve("policy.yaml").toString(), "--cluster", pg.url(), "--node-name", name, "--cluster-secret", secret.toString(),
                "--cluster-lease", Long.toString(LEASE.toSeconds()));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        return p;
    }

    private static void awaitState(String node, String state, Duration within, Path log) throws InterruptedException, IOException {
        long end = System.nanoTime() + within.toNanos();
        String seen = null;
        while (System.nanoTime() < end) {
            JsonNode n = nodes(alpha).get(node);
            seen = n == null ? "absent" : n.path("state").asString();
            if (seen.equals(state)) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("node " + node + " is " + seen + ", not " + state + ", after " + within + "; its output:\n" + Files.readString(log));
    }

    /**
     * A client's quota holds across the nodes: 8 creates at once, half through each node, against a
     * quota of 2 give exactly 2; the others are refused by the quota control, and a place is free
     * again once a sandbox is gone.
     */
    @Test
    void aClientsQuotaHoldsAcrossTheNodesUnderConcurrentCreates() throws Exception {
        List<java.util.concurrent.Future<HttpResponse<String>>> creates = new java.util.ArrayList<>();
        try (var threads = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < 8; i++) {
                LiveServer via = i % 2 == 0 ? alpha : beta;
                creates.add(threads.submit(() -> via.raw("POST", "/v1/sandboxes", "{}")));
            }
        }
        List<String> made = new java.util.ArrayList<>();
        for (int i = 0; i < creates.size(); i++) {
            HttpResponse<String> r = creates.get(i).get();
            if (r.statusCode() == 201) {
                String id = JSON.readTree(r.body()).path("id").asString();
                assertThat(JSON.readTree(r.body()).path("node").asString()).as("the node that holds it").isIn("alpha", "beta");
                made.add(id);
            } else {
                assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
                assertThat(r.body()).contains("already holds 2 sandboxes", "quotas.sandboxes");
            }
        }
        try {
            assertThat(made).as("creates that got a sandbox, of 8 against a quota of 2 on two nodes").hasSize(2);
        } finally {
            made.forEach(id -> alpha.raw("DELETE", "/v1/sandboxes/" + id, null));   // through alpha wherever it is held
        }
        // the places are free again: each node may create once more
        for (LiveServer via : List.of(alpha, beta)) {
            HttpResponse<String> r = via.raw("POST", "/v1/sandboxes", "{}");
            assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
            assertThat(via.raw("DELETE", "/v1/sandboxes/" + JSON.readTree(r.body()).path("id").asString(), null).statusCode()).isEqualTo(204);
        }
    }

    /**
     * The database stopped: a create is refused with 503 and why, /health says so (without the
     * database's address), the nodes serve on; started again, creates succeed and the nodes are up
     * again.
     */
    @Test
    void whileTheDatabaseIsAwayCreatesThatNeedItAreRefusedAndAfterItAllGoesOn() throws Exception {
        pg.stopServer();
        try {
            HttpResponse<String> refused = alpha.raw("POST", "/v1/sandboxes", "{}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(503);
            assertThat(refused.body()).contains("does not answer", "refused until it answers").doesNotContain("password");
            HttpResponse<String> listed = alpha.raw("GET", "/v1/sandboxes", null);
            assertThat(listed.statusCode()).as("the node serves on").isEqualTo(200);
            assertThat(JSON.readTree(listed.body()).path("partial").asString()).contains("database does not answer", "this node's own only");
            JsonNode health = JSON.readTree(alpha.raw("GET", "/health", null, null).body());
            assertThat(health.path("status").asString()).isEqualTo("degraded");
            assertThat(health.path("reason").asString()).contains("creates are refused");
            assertThat(health.path("cluster").path("database").asString()).isEqualTo("does not answer");
            assertThat(health.toString()).as("nothing of the database's address").doesNotContain("127.0.0.1");
        } finally {
            pg.startServer();
        }
        HttpResponse<String> made = null;
        for (int i = 0; i < 50 && (made == null || made.statusCode() != 201); i++) {
            made = alpha.raw("POST", "/v1/sandboxes", "{}");
            Thread.sleep(100);
        }
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        JsonNode health = JSON.readTree(alpha.raw("GET", "/health", null, null).body());
        assertThat(health.path("status").asString()).isEqualTo("ok");
        assertThat(health.path("cluster").path("node").asString()).isEqualTo("alpha");
        assertThat(health.path("cluster").path("database").asString()).isEqualTo("answers");
        assertThat(alpha.raw("DELETE", "/v1/sandboxes/" + JSON.readTree(made.body()).path("id").asString(), null).statusCode()).isEqualTo(204);
        Path none = Files.createTempFile("airlock-no-log", ".log");
        try {
            awaitState("alpha", "up", Duration.ofSeconds(10), none);
            awaitState("beta", "up", Duration.ofSeconds(10), none);
        } finally {
            Files.delete(none);
        }
    }

    @Test
    void aServerThatRunsAloneSaysSo() {
        try (LiveServer alone = LiveServer.start(c -> c.withPoolSize(0).withE2bPort(ServerConfig.E2B_OFF))) {
            HttpResponse<String> r = alone.raw("GET", "/v1/cluster/nodes", null);
            assertThat(r.statusCode()).isEqualTo(409);
            assertThat(r.body()).contains("runs alone", "--cluster");
        }
    }
}
