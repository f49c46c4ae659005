package dev.airlock.it;

import dev.airlock.server.e2b.E2bDoor;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The E2B door under a hostile client: malformed Connect envelopes and bodies over the limits are
 * refused at once with a clear error; a stream the client never reads is cut by the idle timeout;
 * hundreds of idle streams leave the server answering; another client's sandbox, named in the
 * headers or the path, looks exactly like one that does not exist.
 */
class E2bDoorHostileTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String OTHER = "alk_e2b-hostile-other-0123456789abcdef012345";
    private static LiveServer live;
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    /** A sandbox of the local client, and its envd access token. */
    private static String sandbox;
    private static String accessToken;

    @BeforeAll
    static void start() {
        live = LiveServer.withPolicy("""
                profiles:
                  default: {}
                  roomy: {limits: {memory: 768m}}
                e2b:
                  templates: {analysis: roomy}
                clients:
                  local: {tokenFile: token, profiles: [default, roomy], allow: ["*"]}
                  other: {tokenSha256: %s, profiles: [default], allow: ["*"]}
                """.formatted(HexFormat.of().formatHex(Policy.sha256(OTHER))), c -> c.withPoolSize(0));
        JsonNode created = JSON.readTree(control("POST", "/v2/sandboxes", "{\"templateID\": \"base\", \"timeout\": 900}", live.token(), 201));
        sandbox = created.path("sandboxID").asString();
        accessToken = created.path("envdAccessToken").asString();
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static URI door(String path) {
        return live.server.e2bUri().resolve(path);
    }

    private static String control(String method, String path, String body, String token, int status) {
        HttpResponse<String> r = send(HttpRequest.newBuilder(door(path)).header("X-API-Key", E2bDoor.apiKey(token))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build());
        assertThat(r.statusCode()).as(method + " " + path + ": " + r.body()).isEqualTo(status);
        return r.body();
    }

    /** A Connect call to the sandbox's envd with {@code body} as sent, and {@code contentType}. */
    private static HttpResponse<String> envd(String rpc, String contentType, byte[] body, String id, String token) {
        HttpRequest.Builder b = HttpRequest.newBuilder(door("/" + rpc)).header("Content-Type", contentType)
                .header("E2b-Sandbox-Id", id).header("E2b-Sandbox-Port", "49983")
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (token != null) {
            b.header("X-Access-Token", token);
        }
        return send(b.build());
    }

    private static HttpResponse<String> send(HttpRequest request) {
        try {
            return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static byte[] envelope(int flags, int declared, byte[] message) {
        return ByteBuffer.allocate(5 + message.length).put((byte) flags).putInt(declared).put(message).array();
    }

    private static byte[] start(String... argv) {
        StringBuilder args = new StringBuilder();
        for (int i = 1; i < argv.length; i++) {
            args.append(i > 1 ? "," : "").append('"').append(argv[i]).append('"');
        }
        byte[] m = ("{\"process\": {\"cmd\": \"" + argv[0] + "\", \"args\": [" + args + "]}}").getBytes(StandardCharsets.UTF_8);
        return envelope(0, m.length, m);
    }

    private static void assertConnectError(HttpResponse<String> r, int status, String code, String... message) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        JsonNode error = JSON.readTree(r.body());
        assertThat(error.path("code").asString()).as(r.body()).isEqualTo(code);
        assertThat(error.path("message").asString()).contains(message);
    }

    @Test
    void aTemplateThePolicyMapsGivesItsProfileAndOneItDoesNotIsRefusedByName() {
        JsonNode created = JSON.readTree(control("POST", "/v2/sandboxes", "{\"templateID\": \"analysis\"}", live.token(), 201));
        String id = created.path("sandboxID").asString();
        try {
            assertThat(created.path("templateID").asString()).isEqualTo("analysis");
            assertThat(JSON.readTree(control("GET", "/sandboxes/" + id, null, live.token(), 200)).path("memoryMB").asInt()).isEqualTo(768);
            assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id, null).body()).path("profile").asString()).isEqualTo("roomy");
        } finally {
            control("DELETE", "/sandboxes/" + id, null, live.token(), 204);
        }
        // the other client has no profile roomy: the profile control refuses, as for any create
        JsonNode refused = JSON.readTree(control("POST", "/v2/sandboxes", "{\"templateID\": \"analysis\"}", OTHER, 403));
        assertThat(refused.path("message").asString()).contains("roomy", "Airlock control profile");
        JsonNode unknown = JSON.readTree(control("POST", "/v2/sandboxes", "{\"templateID\": \"nope\"}", OTHER, 400));
        assertThat(unknown.path("message").asString()).contains("unknown template 'nope'", "analysis", "base", "code-interpreter-v1");
    }

    @Test
    void anE2bPortInUseStopsTheStartWithWhatToDo() throws Exception {
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("airlock-e2e-");
            try {
                dev.airlock.server.config.ServerConfig config = dev.airlock.server.config.ServerConfig.defaults().withPort(0).withDataDir(dir)
                        .withPoolSize(0).withE2bPort(taken.getLocalPort());
                org.assertj.core.api.Assertions.assertThatThrownBy(() -> dev.airlock.server.AirlockServer.start(config).close())
                        .hasMessageContaining(":" + taken.getLocalPort()).hasMessageContaining("--e2b-port");
            } finally {
                LiveServer.deleteTree(dir);
            }
        }
    }

    @Test
    void malformedEnvelopesAreRefusedWithWhatWasWrong() {
        String stream = "application/connect+json";
        byte[] ok = "{\"process\": {\"cmd\": \"true\"}}".getBytes(StandardCharsets.UTF_8);
        assertConnectError(envd("process.Process/Start", stream, new byte[] {0, 0, 0}, sandbox, accessToken),
                400, "invalid_argument", "5 bytes of header");
        assertConnectError(envd("process.Process/Start", stream, envelope(0, 1_000_000_000, ok), sandbox, accessToken),
                400, "invalid_argument", "envelope says 1000000000 bytes");
        assertConnectError(envd("process.Process/Start", stream, envelope(1, ok.length, ok), sandbox, accessToken),
                400, "invalid_argument", "compressed");
        byte[] two = ByteBuffer.allocate(2 * (5 + ok.length)).put(envelope(0, ok.length, ok)).put(envelope(0, ok.length, ok)).array();
        assertConnectError(envd("process.Process/Start", stream, two, sandbox, accessToken), 400, "invalid_argument", "exactly one message");
        byte[] notJson = "{\"process\": ".getBytes(StandardCharsets.UTF_8);
        assertConnectError(envd("process.Process/Start", stream, envelope(0, notJson.length, notJson), sandbox, accessToken),
                400, "invalid_argument", "not valid JSON");
        assertConnectError(envd("process.Process/Start", "application/json", ok, sandbox, accessToken),
                400, "invalid_argument", "application/connect+json");
        assertConnectError(envd("process.Process/List", "application/json", "[1, 2]".getBytes(StandardCharsets.UTF_8), sandbox, accessToken),
                400, "invalid_argument", "JSON object");
        assertConnectError(envd("filesystem.Filesystem/WatchDir", stream, envelope(0, 2, "{}".getBytes(StandardCharsets.UTF_8)), sandbox,
                accessToken), 501, "unimplemented", "not served");
        // and the door still serves
        assertThat(envd("process.Process/List", "application/json", "{}".getBytes(StandardCharsets.UTF_8), sandbox, accessToken).statusCode())
                .isEqualTo(200);
    }

    @Test
    void bodiesOverTheLimitAreRefusedBeforeTheyAreRead() {
        byte[] big = new byte[(1 << 20) + 1];
        java.util.Arrays.fill(big, (byte) ' ');
        assertConnectError(envd("process.Process/List", "application/json", big, sandbox, accessToken), 429, "resource_exhausted",
                "over the E2B door's limit of 1048576 bytes");
        HttpResponse<String> create = send(HttpRequest.newBuilder(door("/v2/sandboxes")).header("X-API-Key", E2bDoor.apiKey(live.token()))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(big)).build());
        assertThat(create.statusCode()).as(create.body()).isEqualTo(413);
        assertThat(JSON.readTree(create.body()).path("message").asString()).contains("1048576 bytes");
    }

    /**
     * A stream of a process that prints without end, never read: the server holds no more of it than
     * the socket's buffers (its writes block, and the idle timeout cuts a write blocked 60 s), the
     * process's output on disk is bounded by the sandbox's budget, and the process runs on, as under
     * envd, until it is killed; then the socket ends. Over a minute of waiting: the full lane's.
     */
    @Test
    @Tag("full")
    void aStreamTheClientNeverReadsHoldsOnlyItsBuffersAndItsProcessCanBeKilled() throws Exception {
        byte[] body = start("yes", "airlock-never-read");
        URI uri = door("/process.Process/Start");
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            OutputStream out = socket.getOutputStream();
            out.write(("POST /process.Process/Start HTTP/1.1\r\nHost: " + uri.getHost() + "\r\nContent-Type: application/connect+json\r\n"
                    + "E2b-Sandbox-Id: " + sandbox + "\r\nE2b-Sandbox-Port: 49983\r\nX-Access-Token: " + accessToken
                    + "\r\nContent-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();
            Thread.sleep(Duration.ofSeconds(40));
            // the process runs on: found by its pid in List, and killed
            JsonNode processes = JSON.readTree(envd("process.Process/List", "application/json", "{}".getBytes(StandardCharsets.UTF_8),
                    sandbox, accessToken).body()).path("processes");
            List<Integer> yes = new ArrayList<>();
            processes.forEach(p -> {
                if (p.path("config").path("cmd").asString().equals("yes")) {
                    yes.add(p.path("pid").asInt());
                }
            });
            assertThat(yes).hasSize(1);
            HttpResponse<String> killed = kill(yes.getFirst());
            assertThat(killed.statusCode()).as(killed.body()).isEqualTo(200);
            // then the socket ends (the stream was cut, or it ended with the process and the idle connection was closed)
            socket.setSoTimeout((int) Duration.ofSeconds(90).toMillis());
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[64 * 1024];
            long read = 0;
            try {
                for (int n; (n = in.read(buf)) >= 0; ) {
                    read += n;
                }
            } catch (java.net.SocketException reset) {
                // a reset is as good as an end: the server closed it
            }
            assertThat(read).as("what the server had sent when the socket ended").isLessThan(64L << 20);
        }
    }

    @Test
    void hundredsOfIdleStreamsLeaveTheServerAnswering() throws Exception {
        // one sleeping process, and 300 streams following it (Connect), none of them read
        HttpResponse<InputStream> started = startStream(start("sleep", "600"));
        assertThat(started.statusCode()).isEqualTo(200);
        InputStream first = started.body();
        byte[] header = first.readNBytes(5);
        int length = ByteBuffer.wrap(header, 1, 4).getInt();
        int pid = JSON.readTree(first.readNBytes(length)).path("event").path("start").path("pid").asInt();
        assertThat(pid).isPositive();
        byte[] connect = ("{\"process\": {\"pid\": " + pid + "}}").getBytes(StandardCharsets.UTF_8);
        List<Socket> streams = new ArrayList<>();
        URI uri = door("/");
        try {
            for (int i = 0; i < 300; i++) {
                Socket s = new Socket(uri.getHost(), uri.getPort());
                streams.add(s);
                byte[] body = envelope(0, connect.length, connect);
                s.getOutputStream().write(("POST /process.Process/Connect HTTP/1.1\r\nHost: x\r\nContent-Type: application/connect+json\r\n"
                        + "E2b-Sandbox-Id: " + sandbox + "\r\nE2b-Sandbox-Port: 49983\r\nX-Access-Token: " + accessToken
                        + "\r\nContent-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().write(body);
            }
            // the server answers the API and the door while they are open
            CompletableFuture<Integer> api = CompletableFuture.supplyAsync(() -> live.raw("GET", "/v1/sandboxes/" + sandbox, null).statusCode());
            CompletableFuture<Integer> list = CompletableFuture.supplyAsync(() -> envd("process.Process/List", "application/json",
                    "{}".getBytes(StandardCharsets.UTF_8), sandbox, accessToken).statusCode());
            assertThat(api.get(60, TimeUnit.SECONDS)).isEqualTo(200);
            assertThat(list.get(60, TimeUnit.SECONDS)).isEqualTo(200);
        } finally {
            for (Socket s : streams) {
                s.close();
            }
            first.close();
        }
        HttpResponse<String> killed = kill(pid);
        assertThat(killed.statusCode()).as(killed.body()).isEqualTo(200);
    }

    /** A server-streamed Start of the shared sandbox's envd with {@code envelope} as its request; its events as they come. */
    private static HttpResponse<InputStream> startStream(byte[] envelope) throws IOException, InterruptedException {
        return HTTP.send(HttpRequest.newBuilder(door("/process.Process/Start"))
                .header("Content-Type", "application/connect+json").header("E2b-Sandbox-Id", sandbox).header("E2b-Sandbox-Port", "49983")
                .header("X-Access-Token", accessToken).POST(HttpRequest.BodyPublishers.ofByteArray(envelope)).build(),
                HttpResponse.BodyHandlers.ofInputStream());
    }

    /** SIGKILL to process {@code pid} of the shared sandbox, through envd. */
    private static HttpResponse<String> kill(Object pid) {
        return envd("process.Process/SendSignal", "application/json",
                ("{\"process\": {\"pid\": " + pid + "}, \"signal\": \"SIGNAL_SIGKILL\"}").getBytes(StandardCharsets.UTF_8), sandbox, accessToken);
    }

    /** The next message of a Connect stream: its JSON. */
    private static JsonNode nextMessage(InputStream in) throws IOException {
        byte[] head = in.readNBytes(5);
        assertThat(head).as("an envelope's head").hasSize(5);
        int length = ByteBuffer.wrap(head, 1, 4).getInt();
        return JSON.readTree(in.readNBytes(length));
    }

    private static HttpResponse<String> input(int pid, String stream, byte[] bytes) {
        String m = "{\"process\": {\"pid\": " + pid + "}, \"input\": {\"" + stream + "\": \""
                + java.util.Base64.getEncoder().encodeToString(bytes) + "\"}}";
        return envd("process.Process/SendInput", "application/json", m.getBytes(StandardCharsets.UTF_8), sandbox, accessToken);
    }

    /**
     * SendInput is a PTY's every keystroke, one call each: a call carries at most 64 KiB, and the calls
     * are folded on the audit log per client and sandbox (the first in full, the rest counted), so a
     * script that types without end adds a constant number of records; every byte still reaches the
     * process. A process started without its stdin open takes none, and says so.
     */
    @Test
    void ptyInputIsBoundedAndAScriptTypingWithoutEndAddsAConstantNumberOfRecords() throws Exception {
        byte[] m = "{\"process\": {\"cmd\": \"/bin/cat\"}, \"pty\": {\"size\": {\"cols\": 80, \"rows\": 24}}}"
                .getBytes(StandardCharsets.UTF_8);
        HttpResponse<InputStream> started = startStream(envelope(0, m.length, m));
        try (InputStream events = started.body()) {
            assertThat(started.statusCode()).isEqualTo(200);
            int pid = nextMessage(events).path("event").path("start").path("pid").asInt();
            assertThat(pid).isPositive();

            assertConnectError(input(pid, "pty", new byte[64 * 1024 + 1]), 429, "resource_exhausted", "over the limit of 65536");

            assertThat(live.server.audit().closeWindowsAndPrune(10_000)).isTrue();
            int before = live.audit(sandbox, null).size();
            int authorizationsBefore = live.audit(sandbox, "authorization").size();
            int keystrokes = 200;
            for (int i = 0; i < keystrokes; i++) {
                HttpResponse<String> r = input(pid, "pty", new byte[] {'k'});
                assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            }
            List<dev.airlock.server.audit.AuditRecord> after = live.audit(sandbox, null);
            assertThat(after.subList(before, after.size())).as("records added by %d inputs", keystrokes).hasSizeLessThanOrEqualTo(5);
            assertThat(live.server.audit().closeWindowsAndPrune(10_000)).isTrue();
            List<dev.airlock.server.audit.AuditRecord> authorizations = live.audit(sandbox, "authorization");
            List<JsonNode> allowed = authorizations.subList(authorizationsBefore, authorizations.size()).stream()
                    .map(r -> JSON.readTree(r.detail())).filter(d -> d.path("interface").asString().equals("e2b")).toList();
            long firsts = allowed.stream().filter(d -> d.path("aggregated").isMissingNode()).count();
            long repeats = allowed.stream().mapToLong(d -> d.path("aggregated").path("repeats").asLong()).sum();
            assertThat(firsts + repeats).as("every input is accounted for, in full or in a count: %s", allowed).isEqualTo(keystrokes);

            // every keystroke reached cat: the terminal echoes it (and cat prints it once a line ends)
            int seen = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);   // keep-alives come at least every 20 s
            while (seen < keystrokes) {
                assertThat(System.nanoTime()).as("%d of %d keystrokes echoed so far", seen, keystrokes).isLessThan(deadline);
                JsonNode data = nextMessage(events).path("event").path("data");
                for (char ch : new String(java.util.Base64.getDecoder().decode(data.path("pty").asString("")), StandardCharsets.UTF_8)
                        .toCharArray()) {
                    seen += ch == 'k' ? 1 : 0;
                }
            }
            assertThat(kill(pid).statusCode()).isEqualTo(200);
        }

        // a command started without stdin: true takes no input
        HttpResponse<InputStream> sleeper = startStream(start("/bin/sleep", "60"));
        try (InputStream events = sleeper.body()) {
            int pid = nextMessage(events).path("event").path("start").path("pid").asInt();
            assertConnectError(input(pid, "stdin", "x".getBytes(StandardCharsets.UTF_8)), 400, "failed_precondition", "takes no input");
            assertThat(kill(pid).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void anotherClientsSandboxLooksExactlyLikeOneThatDoesNotExist() {
        String missing = "al-00000000-doesnotexist";
        // its envd, with the other client's own token for its own sandbox, or with none
        JsonNode mine = JSON.readTree(control("POST", "/v2/sandboxes", "{}", OTHER, 201));
        try {
            String otherToken = mine.path("envdAccessToken").asString();
            for (String token : new String[] {otherToken, null, "forged"}) {
                HttpResponse<String> theirs = envd("process.Process/List", "application/json", "{}".getBytes(StandardCharsets.UTF_8), sandbox, token);
                HttpResponse<String> none = envd("process.Process/List", "application/json", "{}".getBytes(StandardCharsets.UTF_8), missing, token);
                assertThat(theirs.statusCode()).isEqualTo(none.statusCode()).isEqualTo(403);
                assertThat(theirs.body().replace(sandbox, "ID")).isEqualTo(none.body().replace(missing, "ID"));
            }
            // the code interpreter's context calls carry the token as E2B-Traffic-Access-Token: a forged one, or the other
            // client's own, is refused alike
            for (String token : new String[] {otherToken, "forged"}) {
                HttpResponse<String> contexts = send(HttpRequest.newBuilder(door("/contexts")).header("E2b-Sandbox-Id", sandbox)
                        .header("E2b-Sandbox-Port", "49999").header("E2B-Traffic-Access-Token", token).GET().build());
                assertThat(contexts.statusCode()).as(contexts.body()).isEqualTo(403);
            }
            // the control plane: the other client's key
            String theirs = control("GET", "/sandboxes/" + sandbox, null, OTHER, 404);
            String none = control("GET", "/sandboxes/" + missing, null, OTHER, 404);
            assertThat(theirs.replace(sandbox, "ID")).isEqualTo(none.replace(missing, "ID"));
            control("DELETE", "/sandboxes/" + sandbox, null, OTHER, 404);
            control("POST", "/sandboxes/" + sandbox + "/pause", null, OTHER, 404);
            assertThat(JSON.readTree(control("GET", "/v2/sandboxes", null, OTHER, 200)).valueStream()
                    .map(s -> s.path("sandboxID").asString())).containsExactly(mine.path("sandboxID").asString());
        } finally {
            control("DELETE", "/sandboxes/" + mine.path("sandboxID").asString(), null, OTHER, 204);
        }
    }
}
