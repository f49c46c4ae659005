package dev.airlock.it;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A policy's inputs against a real server, over REST: a profile's host directory appears
 * read-only at /inputs/NAME and nothing beside it on the host comes with it; a profile without
 * inputs sees an empty /inputs; and the server's data directory (token, state database, outputs)
 * is never an input: a policy naming it stops the server's start, and a link turned towards it
 * after the start makes the create fail.
 */
class PolicyInputsTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static Path base;
    private static Path shared;
    private static Path link;
    private static String siblingToken;
    private static LiveServer live;

    @BeforeAll
    static void start() throws IOException {
        // createTempDirectory gives 0700: only host root may enter the inputs' parent.
        base = Files.createTempDirectory("airlock-policy-inputs-");
        shared = Files.createDirectory(base.resolve("shared"));
        Files.writeString(shared.resolve("file.txt"), "hello from the host\n");
        siblingToken = "sibling-" + UUID.randomUUID();
        Path sibling = Files.writeString(base.resolve("sibling-secret.txt"), siblingToken + "\n");
        // Writable by everyone on the host: in the sandbox only the read-only mount refuses a write (EROFS).
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        Files.setPosixFilePermissions(shared.resolve("file.txt"), PosixFilePermissions.fromString("rw-rw-rw-"));
        Files.setPosixFilePermissions(sibling, PosixFilePermissions.fromString("rw-r--r--"));
        // Points at the shared directory at start; a test turns it to the data directory later.
        link = Files.createSymbolicLink(base.resolve("link"), shared);
        live = LiveServer.withPolicy("""
                profiles:
                  default: {}
                  reader:
                    inputs: {shared: %s}
                  linked:
                    inputs: {linked: %s}
                clients:
                  local: {tokenFile: token, profiles: [default, reader, linked], allow: ["*"]}
                """.formatted(shared, link), c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        try {
            if (live != null) {
                live.close();
            }
        } finally {
            HostFiles.deleteTree(base);
        }
    }

    private static JsonNode ok(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return r.body().isEmpty() ? null : JSON.readTree(r.body());
    }

    private static String create(String profile) {
        return ok(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"" + profile + "\"}"), 201).path("id").asString();
    }

    private static String python(String id, String code) {
        ObjectNode body = JSON.createObjectNode();
        body.put("language", "python");
        body.put("code", code);
        JsonNode result = ok(live.raw("POST", "/v1/sandboxes/" + id + "/exec", body.toString()), 200);
        assertThat(result.path("exitCode").asInt()).as("stdout: %s; stderr: %s", result.path("stdout"), result.path("stderr")).isZero();
        return result.path("stdout").asString();
    }

    private static final String ATTEMPT = """
            import errno, os
            def attempt(label, fn):
                try:
                    fn()
                    print(f"{label}: ok")
                except OSError as e:
                    print(f"{label}: {errno.errorcode.get(e.errno, e.errno)}")
            def write(path, mode):
                with open(path, mode) as f:
                    f.write("x")
            """;

    @Test
    void aProfilesInputIsReadableReadOnlyAndAloneAtItsName() throws IOException {
        String id = create("reader");
        String out = python(id, ATTEMPT + """
                print(sorted(os.listdir("/inputs")), sorted(os.listdir("/inputs/shared")))
                print(open("/inputs/shared/file.txt").read(), end="")
                attempt("overwrite", lambda: write("/inputs/shared/file.txt", "w"))
                attempt("append", lambda: write("/inputs/shared/file.txt", "a"))
                attempt("create", lambda: write("/inputs/shared/new.txt", "w"))
                attempt("unlink", lambda: os.unlink("/inputs/shared/file.txt"))
                attempt("chmod", lambda: os.chmod("/inputs/shared/file.txt", 0o777))
                attempt("sibling", lambda: open("/inputs/shared/../sibling-secret.txt").read())
                attempt("sibling-by-host-path", lambda: open(%s).read())
                needle = (%s + %s).encode()
                hits = []
                for root, dirs, names in os.walk("/", onerror=lambda e: None):
                    if root == "/":
                        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "usr")]
                    for n in names:
                        p = os.path.join(root, n)
                        try:
                            if os.path.isfile(p) and os.path.getsize(p) < 64 << 20 and needle in open(p, "rb").read():
                                hits.append(p)
                        except OSError:
                            pass
                print("sibling hits", hits)
                """.formatted(pyString(base.resolve("sibling-secret.txt").toString()), pyString("sibling-"),
                pyString(siblingToken.substring("sibling-".length()))));
        assertThat(out).isEqualTo("""
                ['shared'] ['file.txt']
                hello from the host
                overwrite: EROFS
                append: EROFS
                create: EROFS
                unlink: EROFS
                chmod: EROFS
                sibling: ENOENT
                sibling-by-host-path: ENOENT
                sibling hits []
                """);
        ok(live.raw("DELETE", "/v1/sandboxes/" + id, null), 204);
        assertThat(Files.readString(shared.resolve("file.txt"))).isEqualTo("hello from the host\n");
        try (var files = Files.list(shared)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("file.txt");
        }
    }

    @Test
    void aProfileWithoutInputsSeesAnEmptyReadOnlyInputs() {
        String id = create("default");
        String out = python(id, ATTEMPT + """
                print(os.listdir("/inputs"))
                attempt("create", lambda: write("/inputs/new.txt", "w"))
                """);
        assertThat(out).isEqualTo("[]\ncreate: EROFS\n");
        ok(live.raw("DELETE", "/v1/sandboxes/" + id, null), 204);
    }

    @Test
    void aLinkTurnedToTheDataDirectoryAfterTheStartFailsTheCreate() throws IOException {
        Path turned = base.resolve("link.new");
        Files.createSymbolicLink(turned, live.dataDir);
        Files.move(turned, link, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        try {
            int before = ok(live.raw("GET", "/v1/sandboxes", null), 200).path("sandboxes").size();
            HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"linked\"}");
            assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
            JsonNode error = JSON.readTree(r.body()).path("error");
            assertThat(error.path("code").asString()).isEqualTo("invalid_argument");
            assertThat(error.path("message").asString()).contains("input 'linked' (" + link + "), a link to " + live.dataDir.toRealPath(),
                    "never shown to a sandbox");
            assertThat(ok(live.raw("GET", "/v1/sandboxes", null), 200).path("sandboxes").size()).isEqualTo(before);
        } finally {
            Files.delete(link);
            Files.createSymbolicLink(link, shared);
        }
    }

    @Test
    void aPolicyNamingTheDataDirectoryStopsTheStart() throws IOException {
        Path data = Files.createTempDirectory("airlock-e2e-");
        try {
            for (Path named : new Path[] {data, data.resolve("outputs"), data.getParent()}) {
                Path policy = Files.writeString(base.resolve("data-input-policy.yaml"), """
                        profiles:
                          default: {}
                          leaky:
                            inputs: {state: %s}
                        clients:
                          local: {tokenFile: %s, profiles: [default, leaky], allow: ["*"]}
                        """.formatted(named, data.resolve("token")));
                assertThatThrownBy(() -> AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(data).withPoolSize(0)
                        .withPolicyFile(policy)).close())
                        .isInstanceOf(AirlockException.class)
                        .hasMessageContaining("input 'state' (" + named + ") of profile 'leaky'")
                        .hasMessageContaining("the server's data directory " + data)
                        .hasMessageContaining("rule profiles.leaky.inputs")
                        .hasMessageContaining(named.equals(data) ? " is " : named.startsWith(data) ? " lies inside " : " contains ");
            }
        } finally {
            LiveServer.deleteTree(data);
        }
    }

    private static String pyString(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
