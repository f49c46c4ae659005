package dev.airlock.it;

import dev.airlock.core.AirlockException;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.oci.image.ImageStore;
import dev.airlock.server.audit.AuditRecord;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * A stored image through a real server: a profile lists it, a request picks it, the sandbox's
 * representation and the audit record of its creation carry its digest, GET /v1/images lists it,
 * and it cannot be removed while the sandbox lives. The image is a docker save archive the test
 * makes itself, holding busybox-static.
 */
class ImagesApiTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static Path storeDir;
    private static ImageStore store;
    private static String digest;
    private static LiveServer live;

    @BeforeAll
    static void importImageAndStartServer() throws IOException {
        Path busybox = Path.of("/bin/busybox");
        assumeThat(Files.isRegularFile(busybox)).as("busybox-static installed (bin/test installs it)").isTrue();
        storeDir = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-it-images");
        Files.setAttribute(storeDir, "unix:mode", 0711);
        store = ImageStore.at(storeDir.resolve("images"));
        digest = store.importArchive(dockerSave(storeDir.resolve("bb.tar"), Files.readAllBytes(busybox)), "bb").digest();
        live = LiveServer.withPolicy("""
                profiles:
                  default:
                    images: [system, bb]
                  vm:
                    isolation: microvm
                    images: [bb]
                clients:
                  local: {tokenFile: token, profiles: [default, vm], allow: ["*"]}
                """, c -> c.withPoolSize(0).withDriver(OciDriverConfig.defaults().withImageRoot(store.root()).toSettings()));
    }

    @AfterAll
    static void close() {
        if (live != null) {
            live.close();
        }
        if (storeDir != null) {
            LiveServer.deleteTree(storeDir);
        }
    }

    @Test
    void aRequestPicksAnImageItsProfileAllows() {
        JsonNode images = JSON.readTree(live.raw("GET", "/v1/images", null).body()).get("images");
        assertThat(images.get(0).get("name").asString()).isEqualTo("system");
        assertThat(images.get(1).get("name").asString()).isEqualTo("bb");
        assertThat(images.get(1).get("digest").asString()).isEqualTo(digest);

        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"image\": \"bb\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        JsonNode sandbox = JSON.readTree(created.body());
        String id = sandbox.get("id").asString();
        assertThat(sandbox.get("image").asString()).isEqualTo("bb");
        assertThat(sandbox.get("imageDigest").asString()).isEqualTo(digest);
        try {
            HttpResponse<String> exec = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                    "{\"command\": [\"/bin/sh\", \"-c\", \"echo from busybox; test -e /usr/bin/python3 || echo no-python\"]}");
            assertThat(JSON.readTree(exec.body()).get("stdout").asString()).as(exec.body()).isEqualTo("from busybox\nno-python\n");
            assertThatThrownBy(() -> store.remove("bb")).isInstanceOf(AirlockException.class).hasMessageContaining("in use");
            AuditRecord record = live.audit(id, "lifecycle").stream().filter(r -> r.detail().contains("\"created\"")).findFirst().orElseThrow();
            assertThat(record.detail()).contains("\"image\":\"bb\"", "\"imageDigest\":\"" + digest + "\"");
        } finally {
            assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(204);
        }

        HttpResponse<String> system = live.raw("POST", "/v1/sandboxes", "{}");
        assertThat(JSON.readTree(system.body()).get("imageDigest").isNull()).as(system.body()).isTrue();
        live.raw("DELETE", "/v1/sandboxes/" + JSON.readTree(system.body()).get("id").asString(), null);

        HttpResponse<String> refused = live.raw("POST", "/v1/sandboxes", "{\"image\": \"other\"}");
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(refused.body()).contains("profiles.default.images");
    }

    /**
     * The microVM tier serves the same stored image (a squashfs disk of it), and a guest of it can be
     * saved whole: a memory snapshot through REST, two forks of it whose shell loop goes on counting
     * from where the snapshot left it, each fork's own afterwards, and the image held while they live.
     */
    @Test
    void aMicrovmGuestOfTheImageTakesAMemorySnapshotAndItsForksGoOnCounting() throws Exception {
        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"vm\", \"image\": \"bb\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).get("id").asString();
        java.util.List<String> forks = new java.util.ArrayList<>();
        try {
            assertThat(JSON.readTree(created.body()).get("isolation").asString()).isEqualTo("microvm");
            sh(id, "(i=0; while :; do i=$((i+1)); echo $i > /tmp/n; busybox usleep 50000; done) </dev/null >/dev/null 2>&1 &"
                    + " while [ ! -s /tmp/n ]; do busybox usleep 20000; done");
            HttpResponse<String> snap = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"memory\": true}");
            assertThat(snap.statusCode()).as(snap.body()).isEqualTo(201);
            String snapshot = JSON.readTree(snap.body()).get("id").asString();
            HttpResponse<String> forked = live.raw("POST", "/v1/snapshots/" + snapshot + "/fork", "{\"count\": 2}");
            assertThat(forked.statusCode()).as(forked.body()).isEqualTo(201);
            JSON.readTree(forked.body()).get("sandboxes").forEach(f -> forks.add(f.get("id").asString()));
            assertThat(forks).hasSize(2);
            for (String fork : forks) {
                long first = Long.parseLong(sh(fork, "busybox cat /tmp/n"));
                assertThat(first).as("the loop's count, from the snapshot's memory").isPositive();
                assertThat(Long.parseLong(sh(fork, "busybox usleep 300000; busybox cat /tmp/n"))).as("still counting").isGreaterThan(first);
                sh(fork, "echo " + fork + " > /tmp/mine");
            }
            for (String fork : forks) {
                assertThat(sh(fork, "busybox cat /tmp/mine")).as("each fork's own").isEqualTo(fork);
            }
            assertThatThrownBy(() -> store.remove("bb")).isInstanceOf(AirlockException.class).hasMessageContaining("in use");
            assertThat(live.raw("DELETE", "/v1/snapshots/" + snapshot, null).statusCode()).isEqualTo(204);
        } finally {
            for (String fork : forks) {
                live.raw("DELETE", "/v1/sandboxes/" + fork, null);
            }
            assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(204);
        }
    }

    private static String sh(String id, String line) {
        HttpResponse<String> exec = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                "{\"command\": [\"/bin/sh\", \"-c\", " + JSON.writeValueAsString(line) + "]}");
        JsonNode result = JSON.readTree(exec.body());
        assertThat(result.path("exitCode").asInt(-1)).as(exec.body()).isZero();
        return result.get("stdout").asString().strip();
    }

    /** A docker save archive of one layer: busybox as /bin/busybox, /bin/sh a link to it. */
    private static Path dockerSave(Path file, byte[] busybox) throws IOException {
        ByteArrayOutputStream layer = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(layer)) {
            TarArchiveEntry bin = new TarArchiveEntry("bin/", TarArchiveEntry.LF_DIR);
            bin.setMode(0755);
            tar.putArchiveEntry(bin);
            tar.closeArchiveEntry();
            put(tar, "bin/busybox", busybox, 0755);
            TarArchiveEntry sh = new TarArchiveEntry("bin/sh", TarArchiveEntry.LF_SYMLINK);
            sh.setLinkName("busybox");
            tar.putArchiveEntry(sh);
            tar.closeArchiveEntry();
        }
        try (OutputStream out = Files.newOutputStream(file); TarArchiveOutputStream tar = new TarArchiveOutputStream(out)) {
            put(tar, "l1/layer.tar", layer.toByteArray(), 0644);
            put(tar, "manifest.json", "[{\"Config\":\"c.json\",\"Layers\":[\"l1/layer.tar\"]}]".getBytes(StandardCharsets.UTF_8), 0644);
        }
        return file;
    }

    private static void put(TarArchiveOutputStream tar, String name, byte[] content, int mode) throws IOException {
        TarArchiveEntry e = new TarArchiveEntry(name);
        e.setSize(content.length);
        e.setMode(mode);
        tar.putArchiveEntry(e);
        tar.write(content);
        tar.closeArchiveEntry();
    }
}
