package dev.airlock.it;

import dev.airlock.client.Airlock;
import dev.airlock.client.AirlockException;
import dev.airlock.client.BadRequestException;
import dev.airlock.client.ConflictException;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.PayloadTooLargeException;
import dev.airlock.client.QuotaExceededException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import dev.airlock.client.UnauthorizedException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.ByteArrayInputStream;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Every error status of the REST API, through the SDK's typed exceptions where the SDK can send
 * the request, and as raw HTTP where it cannot: always the JSON body
 * {@code {"error": {"code", "message"}}}. Also the endpoints that need no sandbox.
 */
class ServerErrorsTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(0).withMaxSandboxes(2));
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    /** Asserts the status, a JSON content type and the error body; returns the error's message. */
    private static String jsonError(HttpResponse<String> r, int status, String code) {
        assertThat(r.statusCode()).as("status of %s; body %s", r.request().uri(), r.body()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/json"));
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.propertyNames()).containsExactly("error");
        JsonNode error = body.get("error");
        assertThat(error.propertyNames()).containsExactlyInAnyOrder("code", "message");
        assertThat(error.get("code").asString()).isEqualTo(code);
        String message = error.get("message").asString();
        assertThat(message).isNotBlank();
        return message;
    }

    // --- 400 ---

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"{\"limits\":", "not json", "[1, 2]", "{\"ttlSeconds\": 60,}", "\"just a string\""})
    void malformedJsonIsInvalidArgument(String body) {
        jsonError(live.raw("POST", "/v1/sandboxes", body), 400, "invalid_argument");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            /v1/sandboxes | {"limits": {"memory": "64m", "bogus": 1}} | bogus
            /v1/sandboxes | {"colour": "red"}                          | colour
            /v1/sandboxes | {"limits": {"pids": "many"}}               | pids
            /v1/sandboxes | {"ttlSeconds": -5}                         | ttlSeconds
            /v1/sandboxes | {"ttlSeconds": 1000000}                    | ttlSeconds
            /v1/sandboxes | {"limits": {"memory": "lots"}}             | memory
            """)
    void unknownFieldOrBadValueIsInvalidArgumentNamingTheField(String path, String body, String field) {
        assertThat(jsonError(live.raw("POST", path, body), 400, "invalid_argument")).contains(field);
    }

    @Test
    void badExecRequestIsInvalidArgument() {
        try (RemoteSandbox s = live.client.create()) {
            String exec = "/v1/sandboxes/" + s.id() + "/exec";
            assertThat(jsonError(live.raw("POST", exec, "{\"command\": [\"true\"], \"shell\": true}"), 400, "invalid_argument")).contains("shell");
            jsonError(live.raw("POST", exec, "{}"), 400, "invalid_argument");
            jsonError(live.raw("POST", exec, "{\"command\": []}"), 400, "invalid_argument");
            jsonError(live.raw("POST", exec, "{\"command\": [\"true\"], \"language\": \"python\", \"code\": \"1\"}"), 400, "invalid_argument");
            assertThat(jsonError(live.raw("POST", exec, "{\"language\": \"cobol\", \"code\": \"x\"}"), 400, "invalid_argument")).contains("cobol");
            jsonError(live.raw("POST", exec, "{\"command\": [\"cat\"], \"stdinBase64\": \"%%%\"}"), 400, "invalid_argument");
            jsonError(live.raw("POST", "/v1/sandboxes/" + s.id() + "/processes/p-1/signal", "{\"signal\": \"TERM\"}"), 404, "not_found");
        }
    }

    @Test
    void renameWithoutAnAbsoluteTargetIsInvalidArgument() {
        try (RemoteSandbox s = live.client.create()) {
            s.files().write("/workspace/a", "a".getBytes());
            String rename = "/v1/sandboxes/" + s.id() + "/files/rename";
            jsonError(live.raw("POST", rename, "{\"from\": \"/workspace/a\"}"), 400, "invalid_argument");
            jsonError(live.raw("POST", rename, "{\"from\": \"/workspace/a\", \"to\": null}"), 400, "invalid_argument");
            jsonError(live.raw("POST", rename, "{\"from\": \"/workspace/a\", \"to\": \"workspace/b\"}"), 400, "invalid_argument");
            jsonError(live.raw("POST", rename, "{\"to\": \"/workspace/b\"}"), 400, "invalid_argument");
            assertThat(s.files().read("/workspace/a")).asString().isEqualTo("a");
        }
    }

    @ParameterizedTest(name = "label key [{0}]")
    @ValueSource(strings = {"a=b", " ", ""})
    void labelKeyThatAFilterCouldNeverMatchIsInvalidArgument(String key) {
        assertThat(jsonError(live.raw("POST", "/v1/sandboxes", "{\"labels\": {\"" + key + "\": \"v\"}}"), 400, "invalid_argument"))
                .contains("label");
        assertThat(live.client.list()).isEmpty();
    }

    @Test
    void outOfRangeLimitThroughTheSdkIsBadRequest() {
        BadRequestException e = catchThrowableOfType(BadRequestException.class,
                () -> live.client.create(SandboxSpec.builder().pids(100_000).build()));
        assertThat(e.status()).isEqualTo(400);
        assertThat(e.code()).isEqualTo("invalid_argument");
        assertThat(e.getMessage()).contains("pids");
        assertThatThrownBy(() -> live.client.create(SandboxSpec.builder().memory("5000g").build()))
                .isInstanceOf(BadRequestException.class).hasMessageContaining("memory");
        assertThat(live.client.list()).isEmpty();
    }

    // --- 401 ---

    @Test
    void wrongTokenIsUnauthorized() {
        try (Airlock wrong = Airlock.connect(live.uri(), "not-the-token")) {
            UnauthorizedException e = catchThrowableOfType(UnauthorizedException.class, wrong::list);
            assertThat(e.status()).isEqualTo(401);
            assertThat(e.code()).isEqualTo("unauthenticated");
            assertThatThrownBy(() -> wrong.create()).isInstanceOf(UnauthorizedException.class);
            assertThatThrownBy(() -> wrong.get("al-whatever-0000000000000000")).isInstanceOf(UnauthorizedException.class);
            // /health needs no token.
            assertThat(wrong.health().ok()).isTrue();
        }
        assertThat(live.client.list()).as("nothing was created without the token").isEmpty();
    }

    @ParameterizedTest(name = "Authorization: [{0}]")
    @ValueSource(strings = {"", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "bearer wrong"})
    void missingOrMalformedTokenIsUnauthenticated(String header) throws Exception {
        var b = java.net.http.HttpRequest.newBuilder(java.net.URI.create(live.uri() + "/v1/sandboxes")).GET();
        if (!header.isEmpty()) {
            b.header("Authorization", header);
        }
        HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
        jsonError(r, 401, "unauthenticated");
        assertThat(r.headers().firstValue("WWW-Authenticate")).hasValue("Bearer");
    }

    @Test
    void noTokenIsUnauthenticatedOnEveryProtectedEndpoint() {
        for (String[] req : new String[][] {{"GET", "/v1/sandboxes"}, {"POST", "/v1/sandboxes"}, {"GET", "/metrics"},
                {"DELETE", "/v1/sandboxes/al-x-0000000000000000"}, {"GET", "/v1/nothing-here"}}) {
            jsonError(live.raw(req[0], req[1], req[0].equals("POST") ? "{}" : null, null), 401, "unauthenticated");
        }
    }

    // --- 404 ---

    @Test
    void unknownSandboxIsNotFound() {
        NotFoundException e = catchThrowableOfType(NotFoundException.class, () -> live.client.get("al-nope-0123456789abcdef"));
        assertThat(e.status()).isEqualTo(404);
        assertThat(e.code()).isEqualTo("not_found");
        assertThat(e.getMessage()).contains("al-nope-0123456789abcdef");
        assertThat(live.client.delete("al-nope-0123456789abcdef")).isFalse();
        jsonError(live.raw("DELETE", "/v1/sandboxes/al-nope-0123456789abcdef", null), 404, "not_found");
        jsonError(live.raw("POST", "/v1/sandboxes/al-nope-0123456789abcdef/exec", "{\"command\": [\"true\"]}"), 404, "not_found");
        jsonError(live.raw("POST", "/v1/sandboxes/al-nope-0123456789abcdef/ttl", "{\"ttlSeconds\": 60}"), 404, "not_found");
        jsonError(live.raw("GET", "/v1/sandboxes/al-nope-0123456789abcdef/files?path=/etc/passwd", null), 404, "not_found");
    }

    @Test
    void unknownProcessAndMissingFileAreNotFound() {
        try (RemoteSandbox s = live.client.create()) {
            assertThatThrownBy(() -> s.process("p-424242")).isInstanceOf(NotFoundException.class).hasMessageContaining("p-424242");
            jsonError(live.raw("DELETE", "/v1/sandboxes/" + s.id() + "/processes/p-424242", null), 404, "not_found");
            jsonError(live.raw("POST", "/v1/sandboxes/" + s.id() + "/processes/p-424242/signal", "{\"signal\": 15}"), 404, "not_found");
            assertThatThrownBy(() -> s.files().read("/workspace/missing.txt")).isInstanceOf(NotFoundException.class);
            assertThatThrownBy(() -> s.files().stat("/workspace/missing.txt")).isInstanceOf(NotFoundException.class);
            assertThatThrownBy(() -> s.files().list("/workspace/missing-dir")).isInstanceOf(NotFoundException.class);
            assertThatThrownBy(() -> s.files().remove("/workspace/missing.txt")).isInstanceOf(NotFoundException.class);
            assertThatThrownBy(() -> s.files().rename("/workspace/missing.txt", "/workspace/b")).isInstanceOf(NotFoundException.class);
            assertThatThrownBy(() -> s.files().mkdir("/workspace/no/parent", false)).isInstanceOf(NotFoundException.class);
        }
    }

    @ParameterizedTest(name = "{0}")
    // "/" is the web console's page (ConsoleBrowserTest); a page it does not have is as unknown as any endpoint
    @ValueSource(strings = {"/console/nothing.html", "/v1", "/v2/sandboxes", "/v1/nothing", "/v1/sandboxes/al-x-0000000000000000/nothing"})
    void unknownEndpointIsNotFound(String path) {
        jsonError(live.raw("GET", path, null), 404, "not_found");
    }

    /** Browsers ask for /favicon.ico on their own, without a credential: the console's icon, not a 401 in their console. */
    @Test
    void theFaviconIsTheConsolesIconWithoutACredential() {
        HttpResponse<String> r = live.raw("GET", "/favicon.ico", null, null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type").orElse("")).startsWith("image/svg+xml");
        assertThat(r.body()).startsWith("<svg");
    }

    // --- 409 ---

    @Test
    void existingDirectoryAndNonEmptyDirectoryAreConflicts() {
        try (RemoteSandbox s = live.client.create()) {
            s.files().mkdir("/workspace/dir");
            ConflictException e = catchThrowableOfType(ConflictException.class, () -> s.files().mkdir("/workspace/dir", false));
            assertThat(e.status()).isEqualTo(409);
            assertThat(e.code()).isEqualTo("conflict");
            assertThat(s.files().mkdir("/workspace/dir", true).isDirectory()).as("with parents, an existing directory is fine").isTrue();

            s.files().write("/workspace/dir/file", "x".getBytes());
            assertThatThrownBy(() -> s.files().remove("/workspace/dir")).isInstanceOf(ConflictException.class);
            assertThat(s.files().exists("/workspace/dir/file")).isTrue();
            s.files().remove("/workspace/dir", true);
            assertThat(s.files().exists("/workspace/dir")).isFalse();
        }
    }

    // --- 413 ---

    @Test
    void uploadOverTheFileSizeLimitIsTooLarge() {
        try (RemoteSandbox s = live.client.create(SandboxSpec.builder().fileSize("64k").build())) {
            PayloadTooLargeException e = catchThrowableOfType(PayloadTooLargeException.class,
                    () -> s.files().write("/workspace/big", new ByteArrayInputStream(new byte[200 * 1024])));
            assertThat(e.status()).isEqualTo(413);
            assertThat(e.code()).isEqualTo("too_large");
            assertThat(s.files().write("/workspace/small", new byte[64 * 1024]).size()).isEqualTo(64 * 1024);
        }
    }

    // --- 429 ---

    @Test
    void createBeyondMaxSandboxesIsQuotaExceeded() {
        RemoteSandbox first = live.client.create();
        RemoteSandbox second = live.client.create();
        try {
            QuotaExceededException e = catchThrowableOfType(QuotaExceededException.class, () -> live.client.create());
            assertThat(e.status()).isEqualTo(429);
            assertThat(e.code()).isEqualTo("quota_exceeded");
            assertThat(e.getMessage()).contains("2");
            assertThat(live.client.list()).hasSize(2);
            second.close();
            try (RemoteSandbox third = live.client.create()) {
                assertThat(third.exec("echo", "room again").stdout()).isEqualTo("room again\n");
            }
        } finally {
            first.close();
            second.close();
        }
    }

    // --- 405 and errors Jetty raises itself ---

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(delimiter = ' ', textBlock = """
            PATCH /v1/sandboxes
            PUT /v1/sandboxes
            DELETE /v1/sandboxes
            POST /metrics
            """)
    void wrongMethodIsMethodNotAllowed(String method, String path) {
        assertThat(jsonError(live.raw(method, path, method.equals("GET") || method.equals("DELETE") ? null : "{}"), 405, "method_not_allowed"))
                .contains("GET");
    }

    @Test
    void wrongMethodOnASandboxIsMethodNotAllowed() {
        try (RemoteSandbox s = live.client.create()) {
            jsonError(live.raw("PUT", "/v1/sandboxes/" + s.id(), "{}"), 405, "method_not_allowed");
            jsonError(live.raw("GET", "/v1/sandboxes/" + s.id() + "/exec", null), 405, "method_not_allowed");
            jsonError(live.raw("POST", "/v1/sandboxes/" + s.id() + "/files/stat?path=/etc", "{}"), 405, "method_not_allowed");
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"/v1/sandboxes//x", "/v1/sandboxes/%2e%2e/x", "/v1/sandboxes/a%2fb"})
    void errorsRaisedByTheHttpServerItselfAreJsonToo(String path) {
        HttpResponse<String> r = live.raw("GET", path, null);
        assertThat(r.statusCode()).isBetween(400, 499);
        jsonError(r, r.statusCode(), r.statusCode() == 404 ? "not_found" : "invalid_argument");
    }

    // --- endpoints without a sandbox ---

    @Test
    void healthNeedsNoToken() {
        HttpResponse<String> r = live.raw("GET", "/health", null, null);
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode health = JSON.readTree(r.body());
        assertThat(health.get("status").asString()).isEqualTo("ok");
        assertThat(health.get("sandboxes").isInt()).isTrue();
        assertThat(live.client.health().ok()).isTrue();
    }

    @Test
    void openApiIsValidJsonWithoutTokenAndListsEveryDocumentedEndpoint() throws Exception {
        HttpResponse<String> r = live.raw("GET", "/openapi.json", null, null);
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode api = JSON.readTree(r.body());
        assertThat(api.get("openapi").asString()).isEqualTo("3.1.0");
        JsonNode paths = api.get("paths");
        assertThat(paths).isNotNull();

        String doc = Files.readString(Path.of("..", "docs", "rest-api.md"));
        Matcher m = Pattern.compile("`(GET|POST|PUT|DELETE|PATCH) (/[^`\\s?\\[]*)").matcher(doc);
        Set<String> documented = new LinkedHashSet<>();
        while (m.find()) {
            documented.add(m.group(1) + " " + m.group(2));
        }
        assertThat(documented).as("endpoints found in docs/rest-api.md").hasSizeGreaterThanOrEqualTo(15);
        for (String endpoint : documented) {
            String method = endpoint.substring(0, endpoint.indexOf(' ')).toLowerCase(Locale.ROOT);
            String path = endpoint.substring(endpoint.indexOf(' ') + 1);
            assertThat(paths.has(path)).as("openapi.json has path %s", path).isTrue();
            assertThat(paths.get(path).has(method)).as("openapi.json has %s", endpoint).isTrue();
        }
    }

    @Test
    void metricsNeedTheTokenAndCountSandboxes() {
        jsonError(live.raw("GET", "/metrics", null, null), 401, "unauthenticated");
        try (RemoteSandbox s = live.client.create()) {
            s.exec("true");
            HttpResponse<String> r = live.raw("GET", "/metrics", null);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("text/plain"));
            assertThat(r.body()).contains("airlock_sandboxes").contains("airlock_pool_ready").contains("airlock_exec_seconds");
            assertThat(r.body()).containsPattern("airlock_sandboxes\\{state=\"running\"} 1(\\.0)?\\n");
        }
    }

    @Test
    void sdkExceptionsCarryTheServersCodeAndMessage() {
        AirlockException e = catchThrowableOfType(AirlockException.class, () -> live.client.get("al-gone-0000000000000000"));
        assertThat(e).isInstanceOf(NotFoundException.class);
        assertThat(e.serverMessage()).contains("does not exist");
    }
}
