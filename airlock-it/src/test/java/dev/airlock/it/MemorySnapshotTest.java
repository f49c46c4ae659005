package dev.airlock.it;

import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Memory snapshots under gVisor as issue 35 asks of a tier that has them: a process holding state
 * in memory goes on in each of three forks, which then diverge; each fork draws its own kernel
 * randomness; a file written before the snapshot is there; each fork is under its own limits. And
 * hostile: a sandbox that fills its memory cannot snapshot past its owner's quota (nothing kept), a
 * snapshot taken while a process forks in a loop leaves a usable sandbox and forks, and a client
 * forking to get more sandboxes than its quota gets none.
 */
class MemorySnapshotTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String TIGHT = "alk_tight-token-0123456789abcdef012345678901";
    /**
     * A process that counts in memory: {@code /tmp/set} sets its variable x, {@code /tmp/ask} has it
     * write its pid, its count, x, 8 bytes of the kernel's randomness drawn now, and the next number
     * of Python's own generator (seeded before any snapshot) to {@code /tmp/x}.
     */
    private static final String COUNTER = """
            import os, random, time
            random.seed(7)
            n = 0
            x = 'unset'
            while True:
                n += 1
                if os.path.exists('/tmp/set'):
                    x = open('/tmp/set').read()
                    os.remove('/tmp/set')
                if os.path.exists('/tmp/ask'):
                    open('/tmp/x.new', 'w').write('%d %d %s %s %r' % (os.getpid(), n, x, os.urandom(8).hex(), random.random()))
                    os.rename('/tmp/x.new', '/tmp/x')
                    os.remove('/tmp/ask')
                time.sleep(0.05)
            """;
    /** Fetches {@code /tmp/url} through the sandbox's egress proxy whenever asked ({@code /tmp/fetch}), into {@code /tmp/fetched}. */
    private static final String FETCHER = """
            import os, time, urllib.request
            while True:
                if os.path.exists('/tmp/fetch'):
                    try:
                        body = urllib.request.urlopen(open('/tmp/url').read()).read().decode()
                    except Exception as e:
                        body = 'failed: %r' % e
                    open('/tmp/fetched.new', 'w').write(body)
                    os.rename('/tmp/fetched.new', '/tmp/fetched')
                    os.remove('/tmp/fetch')
                time.sleep(0.05)
            """;
    private static LiveServer live;
    private static com.sun.net.httpserver.HttpServer origin;

    @BeforeAll
    static void start() throws IOException {
        live = LiveServer.withPolicy("""
                profiles:
                  strong: {isolation: gvisor}
                  netted:
                    isolation: gvisor
                    network:
                      allow: [{host: test.example}]
                      ranges: [127.0.0.0/8]
                      hosts: {test.example: [127.0.0.1]}
                clients:
                  local: {tokenFile: token, profiles: [strong, netted], allow: ["*"]}
                  tight: {tokenSha256: %s, profiles: [strong], allow: ["*"], quotas: {sandboxes: 3, snapshotMiB: 16}}
                """.formatted(HexFormat.of().formatHex(Policy.sha256(TIGHT))), c -> c.withPoolSize(0));
        origin = com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 10);
        origin.createContext("/", ex -> {
            byte[] body = ("hello from " + ex.getRequestURI()).getBytes();
            ex.sendResponseHeaders(200, body.length);
            try (var out = ex.getResponseBody()) {
                out.write(body);
            }
        });
        origin.start();
    }

    @AfterAll
    static void stop() {
        if (origin != null) {
            origin.stop(0);
        }
        if (live != null) {
            live.close();
        }
    }

    /** What the counter answers: pid, count, x, fresh kernel randomness, Python's next number. */
    private record Answer(String pid, long count, String x, String urandom, String pythonRandom) {
    }

    private static Answer ask(String id, String token) throws Exception {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"sh\", \"-c\","
                + " \"touch /tmp/ask; while [ -e /tmp/ask ]; do sleep 0.05; done; cat /tmp/x\"]}", token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        String[] f = JSON.readTree(r.body()).path("stdout").asString().split(" ");
        return new Answer(f[0], Long.parseLong(f[1]), f[2], f[3], f[4]);
    }

    private static void exec(String id, String token, String shell) {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                "{\"command\": [\"sh\", \"-c\", " + JSON.writeValueAsString(shell) + "]}", token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(JSON.readTree(r.body()).path("exitCode").asInt()).as(r.body()).isZero();
    }

    /** A gVisor sandbox of {@code token}'s client running the counter, with {@code /workspace/before.txt} written. */
    private static String counting(String token) {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"strong\"}", token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        String id = JSON.readTree(r.body()).path("id").asString();
        assertThat(live.raw("PUT", "/v1/sandboxes/" + id + "/files?path=/workspace/counter.py", COUNTER, token).statusCode()).isEqualTo(201);
        exec(id, token, "echo written before > /workspace/before.txt; python3 /workspace/counter.py >/dev/null 2>&1 &");
        return id;
    }

    private static List<String> fork(String snapshot, int count, String token, int expected) {
        HttpResponse<String> r = live.raw("POST", "/v1/snapshots/" + snapshot + "/fork", "{\"count\": " + count + "}", token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(expected);
        List<String> ids = new ArrayList<>();
        for (JsonNode s : JSON.readTree(r.body()).path("sandboxes")) {
            ids.add(s.path("id").asString());
        }
        return ids;
    }

    private static String memorySnapshot(String id, String token) {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"memory\": true}", token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body()).path("id").asString();
    }

    /** The host's memory limit on a sandbox's cgroup (v1 or v2), in bytes; -1 when there is none to read. */
    private static long hostMemoryLimit(String id) throws IOException {
        Path v1 = Path.of("/sys/fs/cgroup/memory/airlock", id, "memory.limit_in_bytes");
        Path v2 = Path.of("/sys/fs/cgroup/airlock", id, "memory.max");
        Path file = Files.exists(v1) ? v1 : v2;
        return Files.exists(file) ? Long.parseLong(Files.readString(file).strip()) : -1;
    }

    @Test
    void threeForksOfAMemorySnapshotGoOnCountingThenDivergeEachWithItsOwnRandomnessAndLimits() throws Exception {
        String original = counting(live.token());
        List<String> forks = List.of();
        try {
            Answer before = ask(original, live.token());
            String snapshot = memorySnapshot(original, live.token());
            forks = fork(snapshot, 3, live.token(), 201);
            assertThat(forks).hasSize(3);
            long limit = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + original, null).body()).path("limits").path("memoryBytes").asLong();
            Set<String> urandom = new HashSet<>();
            Set<String> pythonRandom = new HashSet<>();
            for (int i = 0; i < forks.size(); i++) {
                String fork = forks.get(i);
                // the process, with its memory, and the file written before the snapshot
                Answer restored = ask(fork, live.token());
                assertThat(restored.pid()).as("the original's process").isEqualTo(before.pid());
                assertThat(restored.count()).as("its count went on from the snapshot's").isGreaterThan(before.count());
                HttpResponse<String> file = live.raw("GET", "/v1/sandboxes/" + fork + "/files?path=/workspace/before.txt", null);
                assertThat(file.body()).isEqualTo("written before\n");
                urandom.add(restored.urandom());
                pythonRandom.add(restored.pythonRandom());
                // each fork's memory is its own from here on
                exec(fork, live.token(), "printf fork-" + i + " > /tmp/set.new && mv /tmp/set.new /tmp/set");
                assertThat(ask(fork, live.token()).x()).isEqualTo("fork-" + i);
                // and its limits: the same profile's, on a cgroup of its own that the host kernel enforces
                assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes/" + fork, null).body()).path("limits").path("memoryBytes").asLong())
                        .isEqualTo(limit);
                long host = hostMemoryLimit(fork);
                assertThat(host).as("the host's memory limit on fork " + fork + "'s cgroup").isBetween(1L, limit);
            }
            assertThat(ask(original, live.token()).x()).as("the original, untouched by its forks").isEqualTo("unset");
            assertThat(urandom).as("8 bytes of /dev/urandom drawn in each fork").hasSize(3);
            // what a memory snapshot does not refresh: a user-space generator seeded before it (README, docs/security-model.md)
            assertThat(pythonRandom).as("Python's random, seeded before the snapshot").hasSize(1);
            live.raw("DELETE", "/v1/snapshots/" + snapshot, null);
        } finally {
            for (String id : forks) {
                live.raw("DELETE", "/v1/sandboxes/" + id, null);
            }
            live.raw("DELETE", "/v1/sandboxes/" + original, null);
        }
    }

    /**
     * Egress after a restore: a process started before the memory snapshot, which fetches through
     * the sandbox's egress proxy, fetches again in the fork, through the fork's own proxy (a new
     * run directory and proxy socket), and its request is on the fork's egress records.
     */
    @Test
    void aProcessThatFetchedBeforeTheSnapshotFetchesInTheForkThroughTheForksOwnProxy() throws Exception {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"netted\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        String id = JSON.readTree(r.body()).path("id").asString();
        List<String> forks = List.of();
        String url = "http://test.example:" + origin.getAddress().getPort();
        try {
            assertThat(live.raw("PUT", "/v1/sandboxes/" + id + "/files?path=/workspace/fetcher.py", FETCHER).statusCode()).isEqualTo(201);
            // NO_PROXY would send 127.0.0.1 direct (which fails): every request goes to the proxy
            HttpResponse<String> started = live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"sh\", \"-c\","
                    + " \"python3 /workspace/fetcher.py >/dev/null 2>&1 &\"], \"env\": {\"NO_PROXY\": \"\", \"no_proxy\": \"\"}}");
            assertThat(started.statusCode()).as(started.body()).isEqualTo(200);
            assertThat(fetch(id, url + "/before")).isEqualTo("hello from /before");
            String snapshot = memorySnapshot(id, live.token());
            forks = fork(snapshot, 1, live.token(), 201);
            String fork = forks.getFirst();
            assertThat(fetch(fork, url + "/after")).as("the restored process's request, through the fork's proxy").isEqualTo("hello from /after");
            JsonNode records = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + fork + "/egress", null).body()).path("records");
            assertThat(records.toString()).contains("test.example");
            live.raw("DELETE", "/v1/snapshots/" + snapshot, null);
        } finally {
            for (String f : forks) {
                live.raw("DELETE", "/v1/sandboxes/" + f, null);
            }
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /** Has the fetcher in {@code id} fetch {@code url}; what it got. */
    private static String fetch(String id, String url) throws Exception {
        exec(id, live.token(), "printf %s " + url + " > /tmp/url; touch /tmp/fetch; while [ -e /tmp/fetch ]; do sleep 0.05; done");
        HttpResponse<String> r = live.raw("GET", "/v1/sandboxes/" + id + "/files?path=/tmp/fetched", null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return r.body();
    }

    /** A sandbox that fills its memory: its checkpoint is larger than the owner's 16 MiB quota, so the snapshot is refused and nothing of it is kept. */
    @Test
    @Tag("full")
    void aSandboxThatFillsItsMemoryCannotSnapshotPastItsOwnersQuotaAndNothingIsKept() throws Exception {
        String id = counting(TIGHT);
        try {
            // 64 MiB of random bytes held (runsc compresses its image: zeroes would cost it nothing)
            exec(id, TIGHT, "python3 -c 'import os, time\nb = os.urandom(64 << 20)\nopen(\"/tmp/held\", \"w\").write(\"y\")\n"
                    + "time.sleep(3600)' >/dev/null 2>&1 & while [ ! -e /tmp/held ]; do sleep 0.1; done");
            List<Path> before = blobs();
            HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"memory\": true}", TIGHT);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
            assertThat(r.body()).contains("snapshot quota");
            assertThat(blobs()).as("no blob of the refused snapshot kept").isEqualTo(before);
            Path incoming = live.dataDir.resolve("snapshots").resolve("incoming");
            if (Files.exists(incoming)) {
                try (var left = Files.list(incoming)) {
                    assertThat(left.toList()).as("half-made snapshots").isEmpty();
                }
            }
            assertThat(ask(id, TIGHT).x()).as("the sandbox runs on").isEqualTo("unset");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null, TIGHT);
        }
    }

    /** A process forking in a loop while the snapshot is taken: the snapshot and its fork are usable, and nothing is left after. */
    @Test
    @Tag("full")
    void aSnapshotTakenWhileAProcessForksInALoopLeavesAUsableSandboxAndFork() throws Exception {
        String id = counting(live.token());
        List<String> forks = List.of();
        try {
            exec(id, live.token(), "sh -c 'while :; do /bin/true; done' >/dev/null 2>&1 &");
            String snapshot = memorySnapshot(id, live.token());
            forks = fork(snapshot, 1, live.token(), 201);
            assertThat(ask(forks.getFirst(), live.token()).x()).isEqualTo("unset");
            assertThat(ask(id, live.token()).x()).isEqualTo("unset");
            live.raw("DELETE", "/v1/snapshots/" + snapshot, null);
        } finally {
            for (String f : forks) {
                live.raw("DELETE", "/v1/sandboxes/" + f, null);
            }
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
        // the runtime's delete ends in the background, after the DELETE's answer
        for (String gone : concat(id, forks)) {
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                    assertThat(ServerSnapshotTest.processesNaming(gone)).as("processes of " + gone).isEmpty());
        }
    }

    /** Forks to get past the quota: all or none, so a client that holds 1 of its 3 sandboxes gets no 3 forks, and 2 fit. */
    @Test
    @Tag("full")
    void forkingPastTheClientsQuotaGivesNoSandboxAtAll() throws Exception {
        String id = counting(TIGHT);
        List<String> forks = List.of();
        try {
            String snapshot = memorySnapshot(id, TIGHT); // a few MiB: within its 16 MiB
            HttpResponse<String> refused = live.raw("POST", "/v1/snapshots/" + snapshot + "/fork", "{\"count\": 3}", TIGHT);
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
            // those made before the refusal are destroyed (their teardown ends in the background)
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                    assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes", null, TIGHT).body()).path("sandboxes").size())
                            .as("no fork of the three kept: " + refused.body() + " " + live.raw("GET", "/v1/sandboxes", null, TIGHT).body())
                            .isEqualTo(1));
            forks = fork(snapshot, 2, TIGHT, 201);
            assertThat(forks).hasSize(2);
            live.raw("DELETE", "/v1/snapshots/" + snapshot, null, TIGHT);
        } finally {
            for (String f : forks) {
                live.raw("DELETE", "/v1/sandboxes/" + f, null, TIGHT);
            }
            live.raw("DELETE", "/v1/sandboxes/" + id, null, TIGHT);
        }
    }

    private static List<String> concat(String first, List<String> rest) {
        List<String> all = new ArrayList<>(rest);
        all.addFirst(first);
        return all;
    }

    private static List<Path> blobs() throws IOException {
        try (var files = Files.list(live.dataDir.resolve("snapshots").resolve("blobs"))) {
            return files.sorted().toList();
        }
    }
}
