package dev.airlock.it;

import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Preview ports against a real server and real sandboxes (docs/security-model.md, "Preview
 * ports"): a web server started inside is reached through {@code /v1/sandboxes/{id}/ports/{port}/}
 * by its owner only, on its profile's ports; the sandbox never sees the client's credentials and
 * cannot set a cookie; every answer is CSP-sandboxed; a WebSocket goes through; a preview link
 * works without a token until its sandbox ends; the 33rd stream at once is refused.
 */
class PreviewPortsTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String OTHER = "alk_preview-other-token-0123456789abcdef0123";
    private static final String CSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";
    private static LiveServer live;
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        live = LiveServer.withPolicy("""
                profiles:
                  web: {maxLifetimeSeconds: 3600, limits: {timeoutSeconds: 300}, ports: [8000, 8001, 8002, 8003]}
                clients:
                  local: {tokenFile: token, profiles: [web], allow: ["*"]}
                  other: {tokenSha256: %s, profiles: [web], allow: ["*", sandbox.any]}
                """.formatted(HexFormat.of().formatHex(Policy.sha256(OTHER))), c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static JsonNode ok(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return r.body().isEmpty() ? null : JSON.readTree(r.body());
    }

    private static String sandbox() {
        return ok(live.raw("POST", "/v1/sandboxes", "{}", live.token()), 201).path("id").asString();
    }

    private static void upload(String id, String path, String content) {
        ok(live.raw("PUT", "/v1/sandboxes/" + id + "/files?path=" + path, content, live.token()), 201);
    }

    private static void background(String id, String shell) {
        String body = JSON.createObjectNode().put("background", true).set("command",
                JSON.createArrayNode().add("sh").add("-c").add(shell)).toString();
        ok(live.raw("POST", "/v1/sandboxes/" + id + "/exec", body, live.token()), 202);
    }

    private static String resource(String name) {
        try (InputStream in = PreviewPortsTest.class.getResourceAsStream("preview/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** GETs {@code path} until the server inside answers (a 502 "nothing listens" says it is not listening yet). */
    private static HttpResponse<String> whenListening(String path, String token) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        HttpResponse<String> r;
        do {
            r = live.raw("GET", path, null, token);
            if (r.statusCode() != 502 || !r.body().contains("nothing listens")) {
                return r;
            }
            Thread.sleep(200);
        } while (System.nanoTime() < deadline);
        return r;
    }

    private static HttpResponse<String> send(HttpRequest.Builder b) {
        try {
            return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void theOwnerReachesAWebServerInsideAndNothingElseDoes() throws Exception {
        String id = sandbox();
        String sb = "/v1/sandboxes/" + id;
        try {
            upload(id, "/workspace/site/hello.txt", "hello from inside");
            upload(id, "/workspace/headers_server.py", resource("headers_server.py"));
            background(id, "cd /workspace/site && exec python3 -m http.server 8000 --bind 127.0.0.1");
            background(id, "exec python3 /workspace/headers_server.py 8002");

            HttpResponse<String> listing = whenListening(sb + "/ports/8000/", live.token());
            assertThat(listing.statusCode()).as(listing.body()).isEqualTo(200);
            assertThat(listing.body()).contains("Directory listing for /", "hello.txt");
            // http.server redirects a directory without its slash: the redirect stays within the preview
            upload(id, "/workspace/site/sub/inner.txt", "inner");
            HttpResponse<String> redirect = live.raw("GET", sb + "/ports/8000/sub", null, live.token());
            assertThat(redirect.statusCode()).isEqualTo(301);
            assertThat(redirect.headers().firstValue("Location")).hasValue(sb + "/ports/8000/sub/");
            HttpResponse<String> file = live.raw("GET", sb + "/ports/8000/hello.txt", null, live.token());
            assertThat(file.statusCode()).isEqualTo(200);
            assertThat(file.body()).isEqualTo("hello from inside");
            assertThat(file.headers().firstValue("Content-Security-Policy")).hasValue(CSP);
            assertThat(file.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
            assertThat(file.headers().firstValue("Referrer-Policy")).hasValue("no-referrer");

            // the same through the SDK
            HttpResponse<byte[]> viaSdk = live.client.get(id).portRequest(8000, "GET", "/hello.txt", null);
            assertThat(viaSdk.statusCode()).isEqualTo(200);
            assertThat(new String(viaSdk.body(), StandardCharsets.UTF_8)).isEqualTo("hello from inside");
            assertThat(live.client.get(id).portRequest(8000, "GET", "/missing", null).statusCode()).as("the server inside's 404").isEqualTo(404);
            assertThat(live.client.get(id).info().ports()).as("the profile's ports, as the SDK reads them").containsExactly(8000, 8001, 8002, 8003);

            // another client, even one with sandbox.any, finds no such sandbox
            HttpResponse<String> other = live.raw("GET", sb + "/ports/8000/hello.txt", null, OTHER);
            assertThat(other.statusCode()).as(other.body()).isEqualTo(404);
            assertThat(other.body()).doesNotContain("hello from inside");
            assertThat(live.raw("GET", sb + "/ports/8000/hello.txt", null, null).statusCode()).isEqualTo(401);

            // a port the profile does not name; a profile port where nothing listens
            HttpResponse<String> notPreview = live.raw("GET", sb + "/ports/9000/", null, live.token());
            assertThat(notPreview.statusCode()).as(notPreview.body()).isEqualTo(403);
            assertThat(notPreview.body()).contains("port 9000 is not a preview port of profile 'web'", "8000, 8001, 8002, 8003");
            HttpResponse<String> nothing = live.raw("GET", sb + "/ports/8001/", null, live.token());
            assertThat(nothing.statusCode()).as(nothing.body()).isEqualTo(502);
            assertThat(nothing.body()).contains("nothing listens on port 8001 in the sandbox");
            assertThat(nothing.headers().firstValue("Content-Security-Policy")).hasValue(CSP);

            // a server inside that answers over 64 KiB of headers
            upload(id, "/workspace/big_headers.py", resource("big_headers.py"));
            background(id, "exec python3 /workspace/big_headers.py 8001");
            HttpResponse<String> big = whenListening(sb + "/ports/8001/", live.token());
            assertThat(big.statusCode()).as(big.body()).isEqualTo(502);
            assertThat(big.body()).contains("sent no valid HTTP answer", "over 65536 bytes");

            // the sandbox sees no credential of the client, and cannot set a cookie
            whenListening(sb + "/ports/8002/", live.token());
            HttpResponse<String> echoed = send(HttpRequest.newBuilder(URI.create(live.uri() + sb + "/ports/8002/some/path?q=1&r=two"))
                    .header("Authorization", "Bearer " + live.token()).header("Cookie", "airlock_session=secret-cookie")
                    .header("X-Airlock-CSRF", "secret-csrf").header("X-Custom", "passes")
                    .POST(HttpRequest.BodyPublishers.ofString("the body")));
            assertThat(echoed.statusCode()).as(echoed.body()).isEqualTo(200);
            assertThat(echoed.body()).contains("X-Custom: passes", "path=/some/path?q=1&r=two", "body=the body", "Host: localhost:8002")
                    .doesNotContainIgnoringCase("authorization").doesNotContain(live.token()).doesNotContainIgnoringCase("cookie")
                    .doesNotContain("secret-csrf");
            assertThat(echoed.headers().allValues("Set-Cookie")).as("a cookie set by the sandbox").isEmpty();
            assertThat(echoed.headers().allValues("Clear-Site-Data")).as("the sandbox wiping the console's cookies").isEmpty();
            assertThat(echoed.headers().allValues("Service-Worker-Allowed")).as("the sandbox widening a worker's scope").isEmpty();
            assertThat(echoed.headers().firstValue("X-From-Sandbox")).hasValue("yes");
            assertThat(echoed.headers().firstValue("Content-Security-Policy")).hasValue(CSP);
        } finally {
            live.raw("DELETE", sb, null, live.token());
        }
    }

    @Test
    void aWebSocketGoesThroughAndAPreviewLinkWorksWithoutATokenUntilTheSandboxEnds() throws Exception {
        String id = sandbox();
        String sb = "/v1/sandboxes/" + id;
        upload(id, "/workspace/site/index.html", "<html><body>preview page</body></html>");
        upload(id, "/workspace/ws_echo.py", resource("ws_echo.py"));
        background(id, "cd /workspace/site && exec python3 -m http.server 8000 --bind 127.0.0.1");
        background(id, "exec python3 /workspace/ws_echo.py 8003");
        assertThat(whenListening(sb + "/ports/8000/", live.token()).statusCode()).isEqualTo(200);

        // a WebSocket echo through the port
        List<String> got = new java.util.concurrent.CopyOnWriteArrayList<>();
        CompletableFuture<Void> two = new CompletableFuture<>();
        WebSocket.Listener listener = new WebSocket.Listener() {
            private final StringBuilder text = new StringBuilder();

            @Override
            public CompletionStage<?> onText(WebSocket ws, CharSequence data, boolean last) {
                text.append(data);
                if (last) {
                    got.add(text.toString());
                    text.setLength(0);
                    if (got.size() == 2) {
                        two.complete(null);
                    }
                }
                ws.request(1);
                return null;
            }
        };
        WebSocket ws = null;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (ws == null) {
            try {
                ws = HTTP.newWebSocketBuilder().header("Authorization", "Bearer " + live.token())
                        .buildAsync(URI.create(live.uri().toString().replace("http://", "ws://") + sb + "/ports/8003/echo"), listener)
                        .get(10, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(300); // not listening yet
            }
        }
        ws.sendText("hello through the port", true).get(10, TimeUnit.SECONDS);
        ws.sendText("headers", true).get(10, TimeUnit.SECONDS);
        two.get(20, TimeUnit.SECONDS);
        assertThat(got.get(0)).isEqualTo("hello through the port");
        assertThat(got.get(1)).as("the handshake's headers inside").contains("sec-websocket-key", "upgrade").doesNotContain("authorization");
        ws.sendClose(WebSocket.NORMAL_CLOSURE, "done").get(10, TimeUnit.SECONDS);

        // a preview link: no token needed, and it is on the audit log
        JsonNode link = ok(live.raw("POST", sb + "/ports/8000/link", "{}", live.token()), 201);
        String url = link.path("url").asString();
        assertThat(url).matches("/preview/prv_[A-Za-z0-9_-]{43}/");
        assertThat(link.path("port").asInt()).isEqualTo(8000);
        HttpResponse<String> page = live.raw("GET", url, null, null);
        assertThat(page.statusCode()).as(page.body()).isEqualTo(200);
        assertThat(page.body()).contains("preview page");
        assertThat(page.headers().firstValue("Content-Security-Policy")).hasValue(CSP);
        assertThat(live.raw("GET", url + "missing.css", null, null).statusCode()).as("the sandbox server's own 404").isEqualTo(404);
        dev.airlock.client.PreviewLink sdkLink = live.client.get(id).previewLink(8000);
        assertThat(sdkLink.url().toString()).startsWith(live.uri() + "/preview/prv_");
        assertThat(send(HttpRequest.newBuilder(sdkLink.url())).body()).contains("preview page");
        assertThat(live.raw("POST", sb + "/ports/9000/link", "{}", live.token()).statusCode()).isEqualTo(403);
        assertThat(live.raw("POST", sb + "/ports/8000/link", "{}", OTHER).statusCode()).isEqualTo(404);
        assertThat(live.audit(id, "lifecycle")).anySatisfy(r -> assertThat(r.detail()).contains("\"event\":\"preview-link\"", "\"port\":8000"));
        assertThat(live.raw("GET", "/preview/prv_" + "A".repeat(43) + "/", null, null).statusCode()).isEqualTo(404);

        ok(live.raw("DELETE", sb, null, live.token()), 204);
        HttpResponse<String> after = live.raw("GET", url, null, null);
        assertThat(after.statusCode()).as(after.body()).isEqualTo(404);
        assertThat(after.body()).doesNotContain("preview page");
    }

    /** Sends {@code count} requests to the slow page of port 8002 of {@code sandboxPath}, each on a socket of its own, unread. */
    private static List<Socket> slowRequests(String sandboxPath, String token, int count) throws IOException {
        List<Socket> sockets = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Socket s = new Socket(live.uri().getHost(), live.uri().getPort());
            sockets.add(s);
            OutputStream out = s.getOutputStream();
            out.write(("GET " + sandboxPath + "/ports/8002/slow HTTP/1.1\r\nHost: " + live.uri().getAuthority() + "\r\nAuthorization: Bearer "
                    + token + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
        }
        return sockets;
    }

    /** The status line of the answer on {@code s}, read within 40 s. */
    private static String statusLine(Socket s) throws IOException {
        s.setSoTimeout(40_000);
        return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
    }

    /**
     * Issue 29: one client whose sandboxes answer slowly cannot hold every preview stream of the
     * server. Its two sandboxes hold 32 streams each, the client's 64; a third sandbox of the same
     * client is refused at once, while another client's preview is served.
     */
    @Test
    void oneClientsSlowSandboxesCannotHoldEveryStream() throws Exception {
        List<String> ids = List.of(sandbox(), sandbox(), sandbox());
        String others = ok(live.raw("POST", "/v1/sandboxes", "{}", OTHER), 201).path("id").asString();
        List<Socket> slow = new ArrayList<>();
        try {
            for (String id : ids) {
                upload(id, "/workspace/headers_server.py", resource("headers_server.py"));
                background(id, "exec python3 /workspace/headers_server.py 8002");
                assertThat(whenListening("/v1/sandboxes/" + id + "/ports/8002/", live.token()).statusCode()).isEqualTo(200);
            }
            ok(live.raw("PUT", "/v1/sandboxes/" + others + "/files?path=/workspace/hello.txt", "hello", OTHER), 201);
            String body = JSON.createObjectNode().put("background", true).set("command",
                    JSON.createArrayNode().add("python3").add("-m").add("http.server").add("8000").add("-d").add("/workspace")).toString();
            ok(live.raw("POST", "/v1/sandboxes/" + others + "/exec", body, OTHER), 202);
            assertThat(whenListening("/v1/sandboxes/" + others + "/ports/8000/hello.txt", OTHER).statusCode()).isEqualTo(200);

            // 65 requests that the servers inside hold for 15 seconds: whichever comes last of them is the client's 65th
            slow.addAll(slowRequests("/v1/sandboxes/" + ids.get(0), live.token(), 32));
            slow.addAll(slowRequests("/v1/sandboxes/" + ids.get(1), live.token(), 32));
            slow.addAll(slowRequests("/v1/sandboxes/" + ids.get(2), live.token(), 1));
            HttpResponse<String> another = live.raw("GET", "/v1/sandboxes/" + others + "/ports/8000/hello.txt", null, OTHER);
            assertThat(another.statusCode()).as("another client's preview: " + another.body()).isEqualTo(200);
            assertThat(another.body()).isEqualTo("hello");
            List<String> answers = new ArrayList<>();
            for (Socket s : slow) {
                answers.add(statusLine(s));
            }
            assertThat(answers.stream().filter(a -> a.startsWith("HTTP/1.1 200"))).as("the client's streams let through").hasSize(64);
            assertThat(answers.stream().filter(a -> !a.startsWith("HTTP/1.1 200"))).as("the client's 65th stream").singleElement()
                    .satisfies(a -> assertThat(a).startsWith("HTTP/1.1 429").contains("64 for the sandboxes of one client"));
        } finally {
            for (Socket s : slow) {
                s.close();
            }
            for (String id : ids) {
                live.raw("DELETE", "/v1/sandboxes/" + id, null, live.token());
            }
            live.raw("DELETE", "/v1/sandboxes/" + others, null, OTHER);
        }
    }

    @Test
    void the33rdStreamAtOnceIsRefused() throws Exception {
        String id = sandbox();
        String sb = "/v1/sandboxes/" + id;
        List<Socket> slow = new ArrayList<>();
        try {
            upload(id, "/workspace/headers_server.py", resource("headers_server.py"));
            background(id, "exec python3 /workspace/headers_server.py 8002");
            assertThat(whenListening(sb + "/ports/8002/", live.token()).statusCode()).isEqualTo(200);
            // 40 requests that the server inside holds for 15 seconds: 32 are let through, the rest refused at once
            slow.addAll(slowRequests(sb, live.token(), 40));
            int answered = 0;
            List<String> refused = new ArrayList<>();
            for (Socket s : slow) {
                s.setSoTimeout(40_000);
                String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                if (answer.startsWith("HTTP/1.1 200")) {
                    answered++;
                } else {
                    refused.add(answer);
                }
            }
            assertThat(answered).as("streams let through at once").isEqualTo(32);
            assertThat(refused).hasSize(8).allSatisfy(a -> assertThat(a).startsWith("HTTP/1.1 429").containsIgnoringCase("Retry-After: ")
                    .contains("at most 32 per sandbox"));
            // once they ended, streams are admitted again
            HttpResponse<String> again = live.raw("GET", sb + "/ports/8002/fast", null, live.token());
            for (int i = 0; i < 20 && again.statusCode() == 429; i++) {
                Thread.sleep(100);
                again = live.raw("GET", sb + "/ports/8002/fast", null, live.token());
            }
            assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
        } finally {
            for (Socket s : slow) {
                s.close();
            }
            live.raw("DELETE", sb, null, live.token());
        }
    }

    /**
     * Issue 29: whoever holds a preview link can send thousands of requests a second, with no
     * credential; each used to add two audit records (about 1 KB), enough to push every client's
     * oldest records out at the audit cap. They are folded per link and window: the first in full,
     * the rest counted into one record whose count accounts for every request.
     */
    @Test
    void aScriptHammeringAPreviewLinkAddsAConstantNumberOfRecords() throws Exception {
        String id = sandbox();
        String sb = "/v1/sandboxes/" + id;
        upload(id, "/workspace/site/index.html", "<p>preview page</p>");
        background(id, "cd /workspace/site && exec python3 -m http.server 8000 --bind 127.0.0.1");
        assertThat(whenListening(sb + "/ports/8000/", live.token()).statusCode()).isEqualTo(200);
        String url = ok(live.raw("POST", sb + "/ports/8000/link", "{}", live.token()), 201).path("url").asString();
        assertThat(live.server.audit().closeWindowsAndPrune(10_000)).isTrue();
        int before = live.audit(id, null).size();
        int requests = 300;
        for (int i = 0; i < requests; i++) {
            HttpResponse<String> r = live.raw(i % 2 == 0 ? "GET" : "HEAD", url + (i % 3 == 0 ? "" : "missing-" + i), null, null);
            assertThat(r.statusCode()).as(r.body()).isIn(200, 404);
        }
        List<dev.airlock.server.audit.AuditRecord> after = live.audit(id, null);
        List<dev.airlock.server.audit.AuditRecord> during = after.subList(before, after.size());
        // the first request in full (request, authorization); a window may roll over once
        assertThat(during).as("records added by %d requests through a preview link", requests).hasSizeLessThanOrEqualTo(5);

        assertThat(live.server.audit().closeWindowsAndPrune(10_000)).isTrue();
        List<JsonNode> allowed = live.audit(id, "authorization").stream().map(r -> JSON.readTree(r.detail()))
                .filter(d -> d.path("interface").asString().equals("preview")).toList();
        long firsts = allowed.stream().filter(d -> d.path("aggregated").isMissingNode()).count();
        long repeats = allowed.stream().mapToLong(d -> d.path("aggregated").path("repeats").asLong()).sum();
        assertThat(firsts + repeats).as("every request is accounted for, in full or in a count").isEqualTo(requests);
        assertThat(allowed).allSatisfy(d -> assertThat(d.path("decision").asString()).isEqualTo("allow"));
        assertThat(allowed.stream().map(d -> d.path("aggregated").path("samples").toString()))
                .anySatisfy(samples -> assertThat(samples).contains("HEAD /preview/{token}/"));
        ok(live.raw("DELETE", sb, null, live.token()), 204);
    }
}
