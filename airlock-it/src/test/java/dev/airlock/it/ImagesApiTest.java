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
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
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
