package dev.airlock.it;

import dev.airlock.oci.OciDriverConfig;
import dev.airlock.oci.image.ImageStore;
import dev.airlock.oci.image.TestArchives;
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
import java.util.HexFormat;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The hostile cases of issue 35 on the microVM tier, through a real server whose microVM profile
 * starts guests from a stored busybox image: a guest that fills its memory cannot be snapshotted past
 * its owner's snapshot quota (nothing kept), a snapshot taken while processes fork in a loop leaves a
 * usable guest and fork, and forking past the client's sandbox quota gives no sandbox at all. Full
 * lane: each case boots guests under software emulation.
 */
@Tag("full")
class MicroVmMemorySnapshotTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String TINY = "alk_tiny-token-0123456789abcdef0123456789012";
    private static final String FEW = "alk_few-token-0123456789abcdef01234567890123";
    private static Path storeDir;
    private static LiveServer live;

    @BeforeAll
    static void start() throws IOException {
        TestArchives.staticBusybox();
        storeDir = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-it-vm");
        Files.setAttribute(storeDir, "unix:mode", 0711);
        ImageStore store = ImageStore.at(storeDir.resolve("images"));
        byte[] layer = TestArchives.layer()
                .dir("bin", 0755).file("bin/busybox", 0755, Files.readAllBytes(Path.of("/bin/busybox"))).symlink("bin/sh", "busybox")
                .bytes();
        store.importArchive(TestArchives.dockerSave(storeDir.resolve("bb.tar"), List.of(layer)), "bb");
        live = LiveServer.withPolicy("""
                profiles:
                  vm: {isolation: microvm, image: bb, images: [bb], limits: {memory: 64m}}
                clients:
                  local: {tokenFile: token, profiles: [vm], allow: ["*"]}
                  tiny: {tokenSha256: %s, profiles: [vm], allow: ["*"], quotas: {snapshotMiB: 16}}
                  few: {tokenSha256: %s, profiles: [vm], allow: ["*"], quotas: {sandboxes: 3}}
                """.formatted(HexFormat.of().formatHex(Policy.sha256(TINY)), HexFormat.of().formatHex(Policy.sha256(FEW))),
                c -> c.withPoolSize(0).withDriver(OciDriverConfig.defaults().withImageRoot(store.root()).toSettings()));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
        if (storeDir != null) {
            LiveServer.deleteTree(storeDir);
        }
    }

    private static String create(String token) {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"vm\"}", token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body()).path("id").asString();
    }

    private static String sh(String id, String token, String line) {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                "{\"command\": [\"/bin/sh\", \"-c\", " + JSON.writeValueAsString(line) + "]}", token);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        JsonNode result = JSON.readTree(r.body());
        assertThat(result.path("exitCode").asInt(-1)).as(r.body()).isZero();
        return result.path("stdout").asString().strip();
    }

    private static List<Path> blobs() throws IOException {
        Path dir = live.dataDir.resolve("snapshots").resolve("blobs");
        if (!Files.exists(dir)) {
            return List.of();
        }
        try (var files = Files.list(dir)) {
            return files.sorted().toList();
        }
    }

    /** 32 MiB of random bytes held in the guest's RAM (its /tmp): the snapshot passes the owner's 16 MiB; refused, nothing kept. */
    @Test
    void aGuestThatFillsItsMemoryCannotSnapshotPastItsOwnersQuotaAndNothingIsKept() throws Exception {
        String id = create(TINY);
        try {
            sh(id, TINY, "busybox dd if=/dev/urandom of=/tmp/held bs=1M count=32 2>/dev/null; echo held");
            List<Path> before = blobs();
            HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"memory\": true}", TINY);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
            assertThat(r.body()).contains("snapshot quota");
            assertThat(blobs()).as("no blob of the refused snapshot kept").isEqualTo(before);
            Path incoming = live.dataDir.resolve("snapshots").resolve("incoming");
            if (Files.exists(incoming)) {
                try (var left = Files.list(incoming)) {
                    assertThat(left.toList()).as("half-made snapshots").isEmpty();
                }
            }
            assertThat(sh(id, TINY, "busybox wc -c < /tmp/held")).as("the guest runs on, its memory as it was").isEqualTo("33554432");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null, TINY);
        }
    }

    /** Processes forking in a loop while the guest is saved: the guest and its fork answer after. */
    @Test
    void aSnapshotTakenWhileProcessesForkInALoopLeavesAUsableGuestAndFork() {
        String id = create(live.token());
        List<String> forks = new ArrayList<>();
        try {
            sh(id, live.token(), "for i in 1 2; do (while :; do busybox true; done) </dev/null >/dev/null 2>&1 & done; echo forking");
            HttpResponse<String> snap = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"memory\": true}");
            assertThat(snap.statusCode()).as(snap.body()).isEqualTo(201);
            String snapshot = JSON.readTree(snap.body()).path("id").asString();
            HttpResponse<String> forked = live.raw("POST", "/v1/snapshots/" + snapshot + "/fork", "{\"count\": 1}");
            assertThat(forked.statusCode()).as(forked.body()).isEqualTo(201);
            JSON.readTree(forked.body()).path("sandboxes").forEach(s -> forks.add(s.path("id").asString()));
            assertThat(sh(forks.getFirst(), live.token(), "echo fork answers")).isEqualTo("fork answers");
            assertThat(sh(id, live.token(), "echo original answers")).isEqualTo("original answers");
            live.raw("DELETE", "/v1/snapshots/" + snapshot, null);
        } finally {
            for (String f : forks) {
                live.raw("DELETE", "/v1/sandboxes/" + f, null);
            }
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /** Forks to get past the quota: all or none, so a client holding 1 of its 3 sandboxes gets no 3 forks, and 2 fit. */
    @Test
    void forkingPastTheClientsQuotaGivesNoSandboxAtAll() {
        String id = create(FEW);
        List<String> forks = new ArrayList<>();
        try {
            HttpResponse<String> snap = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"memory\": true}", FEW);
            assertThat(snap.statusCode()).as(snap.body()).isEqualTo(201);
            String snapshot = JSON.readTree(snap.body()).path("id").asString();
            HttpResponse<String> refused = live.raw("POST", "/v1/snapshots/" + snapshot + "/fork", "{\"count\": 3}", FEW);
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                    assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes", null, FEW).body()).path("sandboxes").size())
                            .as("no fork of the three kept").isEqualTo(1));
            HttpResponse<String> two = live.raw("POST", "/v1/snapshots/" + snapshot + "/fork", "{\"count\": 2}", FEW);
            assertThat(two.statusCode()).as(two.body()).isEqualTo(201);
            JSON.readTree(two.body()).path("sandboxes").forEach(s -> forks.add(s.path("id").asString()));
            assertThat(forks).hasSize(2);
            live.raw("DELETE", "/v1/snapshots/" + snapshot, null, FEW);
        } finally {
            for (String f : forks) {
                live.raw("DELETE", "/v1/sandboxes/" + f, null, FEW);
            }
            live.raw("DELETE", "/v1/sandboxes/" + id, null, FEW);
        }
    }
}
