package dev.airlock.client;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class EnvironmentTest {

    FakeAirlock server;

    @BeforeEach
    void start() throws IOException {
        server = new FakeAirlock();
        server.reply("GET", "/v1/sandboxes", 200, "{\"sandboxes\": []}");
    }

    @AfterEach
    void stop() {
        server.close();
    }

    @Test
    void urlAndTokenComeFromTheEnvironment() {
        try (Airlock airlock = Airlock.fromEnvironment(Map.of("AIRLOCK_URL", server.url() + "/", "AIRLOCK_TOKEN", "env-token"))) {
            airlock.list();
        }
        assertThat(server.last().header("Authorization")).isEqualTo("Bearer env-token");
        assertThat(server.last().rawPath()).isEqualTo("/v1/sandboxes");
    }

    @Test
    void withoutAirlockTokenTheServersTokenFileIsRead(@TempDir Path dataDir) throws IOException {
        Files.writeString(dataDir.resolve("token"), "file-token\n");

        try (Airlock airlock = Airlock.fromEnvironment(Map.of("AIRLOCK_URL", server.url().toString(), "AIRLOCK_DATA_DIR", dataDir.toString()))) {
            airlock.list();
        }
        assertThat(server.last().header("Authorization")).isEqualTo("Bearer file-token");
    }

    @Test
    void withoutAnyTokenTheMessageSaysWhereToGetOne(@TempDir Path empty) {
        assertThatThrownBy(() -> Airlock.fromEnvironment(Map.of("AIRLOCK_DATA_DIR", empty.toString())))
                .isInstanceOf(AirlockException.class)
                .hasMessageContaining("AIRLOCK_TOKEN is not set")
                .hasMessageContaining(empty.resolve("token").toString());
    }

    @Test
    void withoutAirlockUrlTheDefaultAddressIsUsed() {
        try (Airlock airlock = Airlock.fromEnvironment(Map.of("AIRLOCK_TOKEN", "t"))) {
            assertThat(airlock.url()).isEqualTo(Airlock.DEFAULT_URL);
        }
    }
}
