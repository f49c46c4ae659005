package dev.airlock.it;

import dev.airlock.oci.OciDriverConfig;
import dev.airlock.oci.image.ImageBuilder;
import dev.airlock.oci.image.ImageStore;
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
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * An interpreter context in an image that has Python but not the kernel (built with mmdebstrap from
 * python3-minimal alone) is refused with a message that names the image and the missing module and
 * says how to get one that has it, not as a fault of the host. The packages come from the cache
 * ImageBuildTest fills under /var/tmp, so only the first run on a machine downloads them.
 *
 * <p>In the full lane ({@code bin/test --full}), with the other image builds but ImageBuildTest.
 */
@Tag("full")
class InterpreterImageTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Path PACKAGE_CACHE = Path.of("/var/tmp/airlock-test-debs");
    private static Path storeDir;
    private static LiveServer live;

    @BeforeAll
    static void buildImageAndStartServer() throws IOException {
        assumeThat(Files.isExecutable(Path.of("/usr/bin/mmdebstrap"))).as("mmdebstrap installed (bin/test installs it)").isTrue();
        storeDir = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-it-interpreter-image");
        Files.setAttribute(storeDir, "unix:mode", 0711);
        ImageStore store = ImageStore.at(storeDir.resolve("images"));
        new ImageBuilder(store, Duration.ofMinutes(20), PACKAGE_CACHE).build("py-minimal", List.of("python3-minimal"), null,
                storeDir.resolve("build.log"));
        live = LiveServer.withPolicy("""
                profiles:
                  default:
                    images: [system, py-minimal]
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
    void aContextInAnImageWithoutIpykernelNamesTheModuleAndTheImage() {
        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 300, \"image\": \"py-minimal\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String sandbox = JSON.readTree(created.body()).get("id").asString();

        HttpResponse<String> context = live.raw("POST", "/v1/sandboxes/" + sandbox + "/contexts", "{}");
        assertThat(context.statusCode()).as(context.body()).isEqualTo(400);
        JsonNode error = JSON.readTree(context.body());
        assertThat(error.toString())
                .contains("image 'py-minimal'")
                .containsPattern("has no Python module '[a-z_]+'")   // the first import that failed: json, here (python3-minimal has no full standard library)
                .contains("ipykernel")
                .contains("airlock image build python-data")
                .contains("python3-ipykernel")
                .doesNotContain("on this host");

        // The sandbox is unharmed: Python itself runs there.
        HttpResponse<String> exec = live.raw("POST", "/v1/sandboxes/" + sandbox + "/exec", "{\"language\": \"python\", \"code\": \"print(6 * 7)\"}");
        assertThat(exec.statusCode()).as(exec.body()).isEqualTo(200);
        assertThat(JSON.readTree(exec.body()).get("stdout").asString()).isEqualTo("42\n");
    }
}
