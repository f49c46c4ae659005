package dev.airlock.it;

import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Outputs: what code leaves in /workspace/output is collected into the server's data directory
 * when its sandbox ends, within the profile's cap, and only its owner can download it. Names
 * and links made by hostile code do not reach outside the outputs folder.
 */
class OutputsTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String OTHER = "alk_other-client-token-0123456789abcdef01234";
    private static LiveServer live;

    @BeforeAll
    static void start() {
        live = LiveServer.withPolicy("""
                profiles:
                  default: {outputs: 1k}
                  none: {outputs: "0"}
                clients:
                  local: {tokenFile: token, profiles: [default, none], allow: ["*"]}
                  other: {tokenSha256: %s, profiles: [default], allow: [outputs, sandbox.create]}
                """.formatted(HexFormat.of().formatHex(Policy.sha256(OTHER))), c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static String sandbox(String profile) {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"" + profile + "\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body()).path("id").asString();
    }

    private static void sh(String id, String script) {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                JSON.createObjectNode().set("command", JSON.valueToTree(List.of("sh", "-c", script))).toString());
        assertThat(JSON.readTree(r.body()).path("exitCode").asInt()).as(r.body()).isZero();
    }

    private static HttpResponse<String> file(String id, String path, String token) {
        return live.raw("GET", "/v1/outputs/" + id + "/files?path=" + URLEncoder.encode(path, StandardCharsets.UTF_8), null, token);
    }

    @Test
    void outputsAreCollectedCappedAndDownloadableByTheirOwnerOnly() throws Exception {
        String id = sandbox("default");
        sh(id, """
                cd /workspace/output
                head -c 100 /dev/zero | tr '\\0' a > a.txt
                head -c 800 /dev/zero | tr '\\0' c > c.txt
                mkdir sub && head -c 600 /dev/zero | tr '\\0' b > sub/b.bin
                ln -s /etc/passwd link
                ln -s ../../../../var/lib/airlock/token escape
                mkfifo pipe
                printf x > "$(printf 'bad\\nname')"
                printf y > manifest.json
                """);
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(204);

        JsonNode m = JSON.readTree(live.raw("GET", "/v1/outputs/" + id, null).body());
        assertThat(m.path("owner").asString()).isEqualTo("local");
        assertThat(m.path("files").valueStream().map(f -> f.path("path").asString())).containsExactly("a.txt", "c.txt");
        assertThat(m.path("bytes").asLong()).isEqualTo(900);
        assertThat(m.path("skipped").toString()).contains("sub/b.bin", "over the profile's output cap", "name not allowed");
        assertThat(file(id, "a.txt", live.token()).body()).isEqualTo("a".repeat(100));
        assertThat(file(id, "sub/b.bin", live.token()).statusCode()).isEqualTo(404);
        assertThat(file(id, "link", live.token()).statusCode()).isEqualTo(404);
        assertThat(file(id, "../token", live.token()).statusCode()).isEqualTo(404);
        assertThat(file(id, "../../token", live.token()).statusCode()).isEqualTo(404);
        assertThat(live.raw("GET", "/v1/outputs", null).body()).contains(id);

        // on the host: only plain files, and only under <data>/outputs/<id>
        Path dir = live.dataDir.resolve("outputs").resolve(id);
        try (Stream<Path> all = Files.walk(dir)) {
            assertThat(all.filter(p -> !p.equals(dir)).map(p -> dir.relativize(p).toString()))
                    .containsExactlyInAnyOrder("a.txt", "c.txt", "manifest.json");
        }
        assertThat(Files.readString(dir.resolve("manifest.json"))).doesNotContain("\"y\"");

        // another client sees nothing of it
        assertThat(live.raw("GET", "/v1/outputs/" + id, null, OTHER).statusCode()).isEqualTo(404);
        assertThat(file(id, "a.txt", OTHER).statusCode()).isEqualTo(404);
        assertThat(live.raw("GET", "/v1/outputs", null, OTHER).body()).doesNotContain(id);
        assertThat(live.raw("DELETE", "/v1/outputs/" + id, null, OTHER).statusCode()).isEqualTo(404);

        assertThat(live.audit(id, AuditRecord.LIFECYCLE)).anySatisfy(r -> assertThat(r.detail())
                .contains("\"event\":\"destroyed\"", "\"outputs\":{\"bytes\":900,\"cut\":[],\"entries\":9,\"files\":2,\"skipped\":"));

        assertThat(live.raw("DELETE", "/v1/outputs/" + id, null).statusCode()).isEqualTo(204);
        assertThat(live.raw("GET", "/v1/outputs/" + id, null).statusCode()).isEqualTo(404);
        assertThat(dir).doesNotExist();
    }

    @Test
    void aProfileWithoutOutputsKeepsNothing() {
        String id = sandbox("none");
        sh(id, "mkdir -p /workspace/output && echo kept > /workspace/output/x.txt");
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(204);
        assertThat(live.raw("GET", "/v1/outputs/" + id, null).statusCode()).isEqualTo(404);
        assertThat(live.dataDir.resolve("outputs").resolve(id)).doesNotExist();
    }

    @Test
    void aSandboxThatLeftNoOutputsHasNone() {
        String id = sandbox("default");
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(204);
        HttpResponse<String> r = live.raw("GET", "/v1/outputs/" + id, null);
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(r.body()).contains("/workspace/output");
    }
}
