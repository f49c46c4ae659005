package dev.airlock.client;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SandboxLifecycleTest {

    static final String ID = "al-ab12cd34-0123456789abcdef";
    static final String SANDBOX = """
            {"id": "al-ab12cd34-0123456789abcdef", "state": "running", "image": "system",
             "limits": {"memoryBytes": 268435456, "pids": 256, "cpus": 1.0, "timeoutSeconds": 10.0, "outputBytes": 1048576,
                        "fileSizeBytes": 67108864, "openFiles": 1024, "diskBytes": 134217728},
             "env": {"K": "v"}, "labels": {"team": "x"},
             "createdAt": "2026-11-29T21:00:00Z", "expiresAt": "2026-11-29T21:05:00Z", "idleTimeoutSeconds": 300,
             "lastActivityAt": "2026-11-29T21:00:01Z", "someFutureField": [1, 2]}
            """;

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

    @Test
    void createSendsOnlyTheFieldsThatWereSetInContractNames() {
        server.reply("POST", "/v1/sandboxes", 201, SANDBOX);

        SandboxSpec spec = SandboxSpec.builder().memory("256m").timeout(Duration.ofSeconds(10)).cpus(0.5)
                .label("team", "x").env("K", "v").ttl(Duration.ofMinutes(5)).idleTimeout(Duration.ofSeconds(90)).build();
        airlock.create(spec);

        FakeAirlock.Recorded r = server.last();
        assertThat(r.header("Content-Type")).isEqualTo("application/json");
        assertThat(r.bodyText()).isEqualTo("{\"limits\":{\"memory\":\"256m\",\"cpus\":0.5,\"timeoutSeconds\":10},"
                + "\"env\":{\"K\":\"v\"},\"labels\":{\"team\":\"x\"},\"ttlSeconds\":300,\"idleTimeoutSeconds\":90}");
    }

    @Test
    void defaultSpecIsAnEmptyObjectSoTheServerCanUseItsWarmPool() {
        server.reply("POST", "/v1/sandboxes", 201, SANDBOX);

        airlock.create();

        assertThat(server.last().bodyText()).isEqualTo("{}");
    }

    @Test
    void createdSandboxMapsEveryFieldOfTheContract() {
        server.reply("POST", "/v1/sandboxes", 201, SANDBOX);

        try (RemoteSandbox sandbox = airlock.create()) {
            SandboxInfo info = sandbox.initialInfo();
            assertThat(sandbox.id()).isEqualTo(ID);
            assertThat(info.state()).isEqualTo("running");
            assertThat(info.running()).isTrue();
            assertThat(info.image()).isEqualTo("system");
            assertThat(info.limits()).isEqualTo(new EffectiveLimits(268435456L, 256, 1.0, Duration.ofSeconds(10),
                    1048576L, 67108864L, 1024, 134217728L));
            assertThat(info.env()).isEqualTo(Map.of("K", "v"));
            assertThat(info.labels()).isEqualTo(Map.of("team", "x"));
            assertThat(info.createdAt()).isEqualTo(Instant.parse("2026-11-29T21:00:00Z"));
            assertThat(info.expiresAt()).isEqualTo(Instant.parse("2026-11-29T21:05:00Z"));
            assertThat(info.idleTimeout()).isEqualTo(Duration.ofMinutes(5));
            assertThat(info.lastActivityAt()).isEqualTo(Instant.parse("2026-11-29T21:00:01Z"));
            server.reply("DELETE", "/v1/sandboxes/" + ID, 204, null);
        }
    }

    @Test
    void getAttachesToAnExistingSandbox() {
        server.reply("GET", "/v1/sandboxes/" + ID, 200, SANDBOX);

        RemoteSandbox sandbox = airlock.get(ID);

        assertThat(sandbox.id()).isEqualTo(ID);
        assertThat(server.last().method()).isEqualTo("GET");
        assertThat(sandbox.info().labels()).containsEntry("team", "x");
    }

    @Test
    void getOfAnUnknownSandboxIsNotFound() {
        server.reply("GET", "/v1/sandboxes/al-gone", 404, FakeAirlock.error("not_found",
                "sandbox al-gone does not exist: list sandboxes with GET /v1/sandboxes"));

        assertThatThrownBy(() -> airlock.get("al-gone"))
                .isInstanceOf(NotFoundException.class)
                .hasMessageContaining("sandbox al-gone does not exist");
    }

    @Test
    void listSendsEveryLabelAsKeyEqualsValueAndMapsTheSandboxes() {
        server.reply("GET", "/v1/sandboxes", 200, "{\"sandboxes\": [" + SANDBOX + "," + SANDBOX.replace(ID, "al-other") + "]}");

        List<SandboxInfo> found = airlock.list(Map.of("team", "x", "app", "a b"));

        assertThat(found).extracting(SandboxInfo::id).containsExactly(ID, "al-other");
        assertThat(server.last().rawQuery()).isEqualTo("label=app%3Da%20b&label=team%3Dx");
    }

    @Test
    void listWithoutLabelsHasNoQuery() {
        server.reply("GET", "/v1/sandboxes", 200, "{\"sandboxes\": []}");

        assertThat(airlock.list()).isEmpty();
        assertThat(server.last().rawQuery()).isNull();
    }

    @Test
    void everyRequestCarriesTheBearerToken() {
        server.reply("GET", "/v1/sandboxes", 200, "{\"sandboxes\": []}");
        server.reply("POST", "/v1/sandboxes", 201, SANDBOX);

        airlock.list();
        airlock.create();

        assertThat(server.requests).hasSize(2)
                .allSatisfy(r -> assertThat(r.header("Authorization")).isEqualTo("Bearer " + FakeAirlock.TOKEN));
    }

    @Test
    void closeDeletesTheSandboxOnceAndIgnoresAnAlreadyDeletedOne() {
        server.reply("POST", "/v1/sandboxes", 201, SANDBOX);
        server.reply("DELETE", "/v1/sandboxes/" + ID, 404, FakeAirlock.error("not_found", "sandbox does not exist"));

        RemoteSandbox sandbox = airlock.create();
        sandbox.close();
        sandbox.close();

        assertThat(server.requests).extracting(FakeAirlock.Recorded::method).containsExactly("POST", "DELETE");
    }

    @Test
    void closeReportsOtherFailuresSoLeaksAreVisible() {
        server.reply("POST", "/v1/sandboxes", 201, SANDBOX);
        server.reply("DELETE", "/v1/sandboxes/" + ID, 500, FakeAirlock.error("internal", "runc delete failed"));

        RemoteSandbox sandbox = airlock.create();

        assertThatThrownBy(sandbox::close).isInstanceOf(ServerException.class).hasMessageContaining("runc delete failed");
    }

    @Test
    void deleteByIdSaysWhetherItExisted() {
        server.reply("DELETE", "/v1/sandboxes/" + ID, 204, null);
        server.reply("DELETE", "/v1/sandboxes/al-gone", 404, FakeAirlock.error("not_found", "gone"));

        assertThat(airlock.delete(ID)).isTrue();
        assertThat(airlock.delete("al-gone")).isFalse();
    }

    @Test
    void extendTtlSendsWholeSecondsAndReturnsTheNewExpiry() {
        server.reply("POST", "/v1/sandboxes", 201, SANDBOX);
        server.reply("POST", "/v1/sandboxes/" + ID + "/ttl", 200, SANDBOX.replace("21:05:00Z", "21:15:00Z"));

        SandboxInfo info = airlock.create().extendTtl(Duration.ofMinutes(10));

        assertThat(server.last().bodyText()).isEqualTo("{\"ttlSeconds\":600}");
        assertThat(info.expiresAt()).isEqualTo(Instant.parse("2026-11-29T21:15:00Z"));
    }

    @Test
    void sandboxIdIsPercentEncodedInThePath() {
        server.reply("GET", "/v1/sandboxes/a%2F..%2Fb", 404, FakeAirlock.error("not_found", "no"));

        assertThatThrownBy(() -> airlock.get("a/../b")).isInstanceOf(NotFoundException.class);
        assertThat(server.last().rawPath()).isEqualTo("/v1/sandboxes/a%2F..%2Fb");
    }

    @Test
    void healthNeedsNoSpecialHandling() {
        server.reply("GET", "/health", 200, "{\"status\": \"ok\", \"sandboxes\": 3}");

        assertThat(airlock.health()).isEqualTo(new ServerHealth("ok", 3));
        assertThat(airlock.health().ok()).isTrue();
    }

    @Test
    void aResponseMissingARequiredFieldIsAServerExceptionNamingTheField() {
        server.reply("POST", "/v1/sandboxes", 201, "{\"state\": \"running\"}");

        assertThatThrownBy(() -> airlock.create())
                .isInstanceOf(ServerException.class)
                .hasMessageContaining("sandbox has no 'id'")
                .hasMessageContaining("POST /v1/sandboxes");
    }

    @Test
    void aResponseThatIsNotJsonIsAServerException() {
        server.reply("GET", "/v1/sandboxes", 200, "<html>proxy</html>");

        assertThatThrownBy(() -> airlock.list())
                .isInstanceOf(ServerException.class)
                .satisfies(e -> assertThat(((ServerException) e).code()).isEqualTo("invalid_response"));
    }

    @Test
    void aClosedClientRefusesFurtherCalls() {
        airlock.close();

        assertThatThrownBy(() -> airlock.list()).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    @Test
    void toStringNeverShowsTheToken() {
        assertThat(airlock.toString()).doesNotContain(FakeAirlock.TOKEN).contains("127.0.0.1");
    }
}
