package dev.airlock.client;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class ErrorMappingTest {

    FakeAirlock server;
    Airlock airlock;

    @BeforeEach
    void start() throws IOException {
        server = new FakeAirlock();
        airlock = server.client();
    }

    @AfterEach
    void stop() {
        airlock.close();
        server.close();
    }

    static Stream<Arguments> statuses() {
        return Stream.of(
                Arguments.of(400, "invalid_argument", BadRequestException.class),
                Arguments.of(401, "unauthenticated", UnauthorizedException.class),
                Arguments.of(404, "not_found", NotFoundException.class),
                Arguments.of(409, "conflict", ConflictException.class),
                Arguments.of(413, "too_large", PayloadTooLargeException.class),
                Arguments.of(429, "quota_exceeded", QuotaExceededException.class),
                Arguments.of(503, "unavailable", UnavailableException.class),
                Arguments.of(500, "internal", ServerException.class),
                Arguments.of(502, "bad_gateway", ServerException.class));
    }

    @ParameterizedTest(name = "{0} {1} -> {2}")
    @MethodSource("statuses")
    void everyErrorStatusBecomesItsOwnExceptionWithTheServersCodeAndMessage(int status, String code, Class<? extends AirlockException> type) {
        server.reply("POST", "/v1/sandboxes", status, FakeAirlock.error(code, "the server's sentence for " + code));

        AirlockException e = catchThrowableOfType(AirlockException.class, () -> airlock.create());

        assertThat(e).isExactlyInstanceOf(type);
        assertThat(e.status()).isEqualTo(status);
        assertThat(e.code()).isEqualTo(code);
        assertThat(e.serverMessage()).isEqualTo("the server's sentence for " + code);
        assertThat(e.getMessage()).isEqualTo("the server's sentence for " + code + " (HTTP " + status + " " + code + ")");
    }

    @Test
    void aRefusalNamesTheControlAndRuleAndTheMessageEndsWithThem() {
        server.reply("POST", "/v1/sandboxes", 403, "{\"error\":{\"code\":\"forbidden\",\"message\":\"limits above what profile"
                + " 'small' allows: memory 1g > 256m\",\"control\":\"profile\",\"rule\":\"profiles.small.maxLimits\"}}");

        ForbiddenException e = catchThrowableOfType(ForbiddenException.class, () -> airlock.create());

        assertThat(e.control()).isEqualTo("profile");
        assertThat(e.rule()).isEqualTo("profiles.small.maxLimits");
        assertThat(e.serverMessage()).isEqualTo("limits above what profile 'small' allows: memory 1g > 256m");
        assertThat(e.getMessage()).isEqualTo("limits above what profile 'small' allows: memory 1g > 256m (HTTP 403 forbidden)"
                + " [refused by profile: profiles.small.maxLimits]");
    }

    @Test
    void aQuotaRefusalIsAQuotaExceededExceptionThatNamesItsRule() {
        server.reply("POST", "/v1/sandboxes", 429, "{\"error\":{\"code\":\"quota_exceeded\",\"message\":\"too many\","
                + "\"control\":\"quota\",\"rule\":\"clients.agent.quotas.sandboxes\"}}");

        QuotaExceededException e = catchThrowableOfType(QuotaExceededException.class, () -> airlock.create());

        assertThat(e.control()).isEqualTo("quota");
        assertThat(e.rule()).isEqualTo("clients.agent.quotas.sandboxes");
        assertThat(e.getMessage()).endsWith(" [refused by quota: clients.agent.quotas.sandboxes]");
    }

    @Test
    void anErrorThatNamesNoControlHasNeitherAndNoSuffix() {
        server.reply("GET", "/v1/sandboxes/x", 404, FakeAirlock.error("not_found", "no sandbox x"));

        AirlockException e = catchThrowableOfType(AirlockException.class, () -> airlock.get("x"));

        assertThat(e.control()).isNull();
        assertThat(e.rule()).isNull();
        assertThat(e.getMessage()).isEqualTo("no sandbox x (HTTP 404 not_found)");
    }

    @Test
    void aHostileControlAndRuleAreCleanedAndCut() {
        server.reply("POST", "/v1/sandboxes", 403, "{\"error\":{\"code\":\"forbidden\",\"message\":\"no\","
                + "\"control\":\"pro\\u001b[2Jfile\\n" + "c".repeat(10_000) + "\",\"rule\":\"r\\u202e\\r" + "r".repeat(10_000) + "\"}}");

        AirlockException e = catchThrowableOfType(AirlockException.class, () -> airlock.create());

        assertThat(e.control()).startsWith("pro?[2Jfile ccc").hasSize(Errors.MAX_CONTROL + 1).endsWith("…");
        assertThat(e.rule()).startsWith("r??rrr").hasSize(Errors.MAX_RULE + 1).endsWith("…");
        assertThat(e.getMessage()).hasSizeLessThan(Errors.MAX_MESSAGE + Errors.MAX_CONTROL + Errors.MAX_RULE + 100)
                .doesNotContain("\u001b", "\u202e", "\r", "\n");
    }

    @Test
    void aControlOrRuleThatIsNotTextIsIgnored() {
        server.reply("POST", "/v1/sandboxes", 403, "{\"error\":{\"code\":\"forbidden\",\"message\":\"no\",\"control\":{\"x\":1},\"rule\":7}}");

        AirlockException e = catchThrowableOfType(AirlockException.class, () -> airlock.create());

        assertThat(e.control()).isNull();
        assertThat(e.rule()).isNull();
        assertThat(e.getMessage()).isEqualTo("no (HTTP 403 forbidden)");
    }

    @Test
    void anErrorWithoutAnAirlockBodyNamesTheRequestAndKeepsTheStatusType() {
        server.reply("GET", "/v1/sandboxes", 503, "<html>Service Unavailable</html>");

        AirlockException e = catchThrowableOfType(AirlockException.class, () -> airlock.list());

        assertThat(e).isInstanceOf(UnavailableException.class);
        assertThat(e.code()).isEqualTo("unavailable");
        assertThat(e.getMessage()).contains("GET /v1/sandboxes answered HTTP 503 without an Airlock error body")
                .contains("<html>Service Unavailable</html>");
    }

    @Test
    void anUnboundedServerMessageIsCutAndCleanedBeforeItReachesTheException() {
        String huge = "x".repeat(30_000);
        server.reply("GET", "/v1/sandboxes", 400, FakeAirlock.error("invalid_argument", "bad\\u001b[31m\\r\\nvalue " + huge));

        AirlockException e = catchThrowableOfType(AirlockException.class, () -> airlock.list());

        assertThat(e.serverMessage()).hasSizeLessThanOrEqualTo(Errors.MAX_MESSAGE + 1).startsWith("bad?[31m? value xxx").endsWith("…");
        assertThat(e.getMessage()).hasSizeLessThan(600).doesNotContain("\u001b", "\r", "\n");
    }

    @Test
    void anUnboundedNonJsonErrorBodyIsCutToo() {
        server.reply("GET", "/v1/sandboxes", 500, "y".repeat(1_000_000));

        AirlockException e = catchThrowableOfType(AirlockException.class, () -> airlock.list());

        assertThat(e).isInstanceOf(ServerException.class);
        assertThat(e.getMessage()).hasSizeLessThan(600);
    }

    @Test
    void aWrongTokenIsUnauthorized() {
        server.reply("GET", "/v1/sandboxes", 401, FakeAirlock.error("unauthenticated", "wrong token: it is in /var/lib/airlock/token"));

        assertThatThrownBy(() -> airlock.list())
                .isInstanceOf(UnauthorizedException.class)
                .hasMessageContaining("wrong token");
    }

    @Test
    void connectionRefusedNamesTheUrlAndTellsToStartTheServer() throws IOException {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        URI url = URI.create("http://127.0.0.1:" + port);
        try (Airlock unreachable = Airlock.connect(url, "t")) {
            AirlockConnectionException e = catchThrowableOfType(AirlockConnectionException.class, unreachable::list);

            assertThat(e).isNotNull();
            assertThat(e.getMessage()).contains("http://127.0.0.1:" + port).contains("bin/airlock serve");
            assertThat(e.code()).isEqualTo("connection");
            assertThat(e.status()).isZero();
        }
    }

    @Test
    void aServerThatNeverAnswersHitsTheRequestTimeout() {
        server.on("GET", "/v1/sandboxes", ex -> Thread.sleep(5_000));
        try (Airlock impatient = Airlock.builder().url(server.url()).token("t").requestTimeout(java.time.Duration.ofMillis(200)).build()) {
            assertThatThrownBy(impatient::list)
                    .isInstanceOf(AirlockConnectionException.class)
                    .hasMessageContaining("did not answer GET /v1/sandboxes within 200 ms");
        }
    }
}
