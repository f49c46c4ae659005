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
    private static final Duration LEASE = Duration.ofSeconds(2);

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
        alpha = LiveServer.start(c -> c.withPoolSize(0).withE2bPort(ServerConfig.E2B_OFF).withCluster(node("alpha")));
        beta = LiveServer.start(c -> c.withPoolSize(0).withE2bPort(ServerConfig.E2B_OFF).withCluster(node("beta")));
    }

    @AfterAll
    static void stop() {
        NODE_DIRS.forEach(dev.airlock.core.HostFiles::deleteTree);
        for (AutoCloseable c : new AutoCloseable[] {alpha, beta, pg}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
    }

    private static ClusterSettings node(String name) {
        return new ClusterSettings(pg.url(), name, secret, LEASE);
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
        assertThatThrownBy(() -> startNode(new ClusterSettings(pg.url(), "delta", other, LEASE)))
                .isInstanceOf(AirlockException.class).hasMessageContaining("is not the cluster's");
        assertThatThrownBy(() -> startNode(node("beta")))
                .isInstanceOf(AirlockException.class).hasMessageContaining("node name 'beta' is held by a running node");
        assertThat(nodes(alpha)).doesNotContainKey("delta");
        // a secret others may read is refused before anything is reached
        Path open = secretFile("cluster-secret-for-the-tests-0123456789abcdef");
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rw-r--r--"));
        assertThatThrownBy(() -> startNode(new ClusterSettings(pg.url(), "delta", open, LEASE)))
                .isInstanceOf(AirlockException.class).hasMessageContaining("chmod 600");
        assertThatThrownBy(() -> startNode(new ClusterSettings("postgresql://127.0.0.1:1/none?user=x&password=hidden", "delta", secret, LEASE)))
                .isInstanceOf(AirlockException.class).hasMessageContaining("cannot reach the cluster's database postgresql://127.0.0.1:1/none")
                .hasMessageNotContaining("hidden");
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
     * A node killed with SIGKILL (its own process, {@code airlock serve --cluster}) says nothing: the
     * others count it down once its last heartbeat is older than its lease, and its name is free
     * again then. A node that stops is marked left at once.
     */
    @Test
    void aKilledNodeIsDownAfterItsLeaseAndAStoppedOneHasLeft() throws Exception {
        Path log = Files.createTempFile("airlock-serve-gamma", ".log");
        log.toFile().deleteOnExit();
        // short: each sandbox's unix sockets lie 72 bytes below the state directory, within the kernel's 107
        Path dir = Files.createTempDirectory(Path.of("/tmp"), "al-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));   // sandboxes pass through it to their root
        NODE_DIRS.add(dir);
        Process gamma = serve("gamma", dir, log);
        try {
            awaitState("gamma", "up", Duration.ofSeconds(60), log);
            gamma.destroyForcibly();
            gamma.waitFor(10, TimeUnit.SECONDS);
            // within its lease and a heartbeat of the killing, with room for a loaded host
            awaitState("gamma", "down", LEASE.plusSeconds(5), log);
        } finally {
            gamma.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
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
                "--pool-size", "0", "--cluster", pg.url(), "--node-name", name, "--cluster-secret", secret.toString(),
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

    @Test
    void aServerThatRunsAloneSaysSo() {
        try (LiveServer alone = LiveServer.start(c -> c.withPoolSize(0).withE2bPort(ServerConfig.E2B_OFF))) {
            HttpResponse<String> r = alone.raw("GET", "/v1/cluster/nodes", null);
            assertThat(r.statusCode()).isEqualTo(409);
            assertThat(r.body()).contains("runs alone", "--cluster");
        }
    }
}
