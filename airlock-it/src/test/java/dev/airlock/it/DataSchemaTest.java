package dev.airlock.it;

import dev.airlock.server.AirlockServer;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.store.DataSchema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The data directory's database across versions of Airlock (docs/install.md, "The Debian
 * package"): a database of the previous layout (as Airlock wrote it before it kept a layout
 * version: the same tables, no version) is brought to this one's when the server starts, its token
 * and audit chain kept; one of a newer layout (a package downgraded) is refused, saying what to do.
 */
class DataSchemaTest {

    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @Test
    void aDatabaseOfThePreviousLayoutIsMigratedAndOneOfANewerLayoutIsRefused(@TempDir Path dir) throws Exception {
        ServerConfig config = ServerConfig.defaults().withPort(0).withE2bPort(ServerConfig.E2B_OFF).withDataDir(dir).withPoolSize(0);
        try (AirlockServer first = AirlockServer.start(config)) {
            create(first);
        }
        Path db = dir.resolve("airlock.db");
        String token = Files.readString(dir.resolve("token")).strip();
        assertThat(userVersion(db, null)).as("a fresh database is made at this layout").isEqualTo(DataSchema.CURRENT);
        long records;
        try (AuditReader reader = AuditReader.open(db)) {
            records = reader.verify().records();
        }

        // the previous layout: the same tables, no version
        userVersion(db, 0);
        try (AirlockServer again = AirlockServer.start(config)) {
            assertThat(again.token()).isEqualTo(token);
            create(again);
        }
        assertThat(userVersion(db, null)).isEqualTo(DataSchema.CURRENT);
        try (AuditReader reader = AuditReader.open(db)) {
            AuditReader.Verdict verdict = reader.verify();
            assertThat(verdict.ok()).as(verdict.problem()).isTrue();
            assertThat(verdict.records()).as("the chain goes on from the records before").isGreaterThan(records);
        }

        // a newer layout: refused before anything reads or writes it
        userVersion(db, DataSchema.CURRENT + 1);
        assertThatThrownBy(() -> AirlockServer.start(config).close())
                .hasMessageContaining("written by a newer Airlock").hasMessageContaining("--data-dir");
        assertThat(userVersion(db, null)).isEqualTo(DataSchema.CURRENT + 1);
    }

    private static void create(AirlockServer server) throws Exception {
        HttpResponse<String> created = HTTP.send(HttpRequest.newBuilder(server.uri().resolve("/v1/sandboxes"))
                .header("Authorization", "Bearer " + server.token()).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{}")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
    }

    /** Sets the database's layout version to {@code set} when not null; the version it has then. */
    private static int userVersion(Path db, Integer set) throws Exception {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement()) {
            if (set != null) {
                st.execute("PRAGMA user_version = " + set);
            }
            try (ResultSet rs = st.executeQuery("PRAGMA user_version")) {
                return rs.getInt(1);
            }
        }
    }
}
