package dev.airlock.it;

import dev.airlock.core.ImageInfo;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.oci.image.ImageBuilder;
import dev.airlock.oci.image.ImageRecipe;
import dev.airlock.oci.image.ImageStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * The built-in recipe {@code python-data} built for real with mmdebstrap (what {@code airlock image
 * build python-data} does), then used through a real server: a sandbox of it imports pandas with
 * the image's own Python (not the host's), and an interpreter context in it returns a matplotlib
 * chart as a PNG of the figure's size, so the interpreter works in a built image and not only in
 * {@code system} (the host's /usr).
 *
 * <p>Cost, measured on this project's shared 2-core host at load averages of 8 to 9: the image is
 * big (1.3 GB in 55,000 files: Debian's scipy depends on pythran, which brings g++ and boost).
 * The first run downloads about 185 MiB of packages into the same cache as {@code ImageBuildTest}'s
 * (/var/tmp/airlock-test-debs; about a minute here) and the build took 14.6 minutes in all; with
 * the cache full it took 641 s (dpkg unpacking and configuring the packages is most of it, then
 * the store's digest of the files), and the two cases after it 27 s. The image is removed
 * afterwards; the package cache stays.
 *
 * <p>In the full lane ({@code bin/test --full}): a 1.3 GB image build; the fast lane builds images with
 * mmdebstrap in ImageBuildTest, BuiltImageContractTest and InterpreterImageTest.
 */
@Tag("full")
class PythonDataImageTest {

    private static final Path PACKAGE_CACHE = Path.of("/var/tmp/airlock-test-debs");
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static Path storeDir;
    private static ImageInfo image;
    private static LiveServer live;

    @BeforeAll
    static void buildImageAndStartServer() throws IOException {
        assumeThat(Files.isExecutable(Path.of("/usr/bin/mmdebstrap"))).as("mmdebstrap installed (bin/test installs it)").isTrue();
        storeDir = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-it-pydata");
        Files.setAttribute(storeDir, "unix:mode", 0711);
        ImageStore store = ImageStore.at(storeDir.resolve("images"));
        long start = System.nanoTime();
        image = new ImageBuilder(store, Duration.ofMinutes(30), PACKAGE_CACHE)
                .build("python-data", ImageRecipe.builtIn("python-data"), storeDir.resolve("build.log"), "python-data");
        System.out.printf("built python-data in %d s: %d MiB in %d files%n", (System.nanoTime() - start) / 1_000_000_000,
                image.sizeBytes() >> 20, image.files());
        live = LiveServer.withPolicy("""
                profiles:
                  default:
                    images: [python-data]
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
    void aSandboxOfItImportsPandasWithTheImagesOwnPython() throws IOException {
        String id = sandbox();
        try {
            HttpResponse<String> exec = live.raw("POST", "/v1/sandboxes/" + id + "/exec", """
                    {"command": ["/usr/bin/python3", "-c",
                     "import os, sys, pandas, numpy, scipy, matplotlib; print(pandas.__version__.split('.')[0], sys.version_info[:2] == (3, 11), os.environ['PYTHONDONTWRITEBYTECODE'])"]}
                    """);
            JsonNode r = json(exec, 200);
            // bookworm's pandas 1.5 and Python 3.11, whatever the host has; the recipe's environment is set
            assertThat(r.get("stdout").asString()).as(exec.body()).isEqualTo("1 True 1\n");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    @Test
    void anInterpreterContextInItReturnsAChart() throws IOException {
        String id = sandbox();
        try {
            String base = "/v1/sandboxes/" + id + "/contexts";
            JsonNode context = json(live.raw("POST", base, "{}"), 201);
            assertThat(context.get("state").asString()).isEqualTo("ready");
            String run = base + "/" + context.get("id").asString() + "/run";
            JsonNode chart = json(live.raw("POST", run, JSON.createObjectNode().put("code", """
                    import matplotlib.pyplot as plt
                    x = 41
                    plt.figure(figsize=(3, 2), dpi=100)
                    plt.plot([1, 2, 3], [1, 4, 9])""").toString()), 200);
            assertThat(chart.get("status").asString()).as(chart.toString()).isEqualTo("ok");
            JsonNode png = null;
            for (JsonNode o : chart.get("outputs")) {
                if (o.get("data").has("image/png")) {
                    png = o.get("data").get("image/png");
                }
            }
            assertThat(png).as("a PNG among " + chart.get("outputs")).isNotNull();
            BufferedImage picture = ImageIO.read(new ByteArrayInputStream(Base64.getMimeDecoder().decode(png.asString())));
            assertThat(picture.getWidth()).isEqualTo(300);
            assertThat(picture.getHeight()).isEqualTo(200);
            JsonNode sum = json(live.raw("POST", run, "{\"code\": \"x + 1\"}"), 200);
            assertThat(sum.get("outputs").get(0).get("data").get("text/plain").asString()).isEqualTo("42");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    private static String sandbox() throws IOException {
        JsonNode created = json(live.raw("POST", "/v1/sandboxes", "{\"image\": \"python-data\", \"ttlSeconds\": 600}"), 201);
        assertThat(created.get("imageDigest").asString()).isEqualTo(image.digest());
        return created.get("id").asString();
    }

    private static JsonNode json(HttpResponse<String> r, int status) throws IOException {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return JSON.readTree(r.body());
    }
}
