package dev.airlock.server.store;

import dev.airlock.core.AirlockException;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The server's durable memory of which sandboxes it created, in an embedded SQLite file. A server
 * killed without a chance to clean up leaves rows behind; the next start reads them, reaps the
 * sandboxes (the driver already removed their containers) and reports each one.
 */
public final class SandboxStore implements AutoCloseable {

    /** One row: a sandbox a server instance created and had not yet destroyed. */
    public record Row(String id, String instance, Instant createdAt, String specJson) {
    }

    private final Connection db;

    private SandboxStore(Connection db) {
        this.db = db;
    }

    public static SandboxStore open(Path file) {
        try {
            Connection db = DriverManager.getConnection("jdbc:sqlite:" + file);
            try (Statement st = db.createStatement()) {
                st.execute("PRAGMA journal_mode=WAL");
                // No fsync per row (2 ms of each create and destroy): in WAL mode a commit survives
                // a crash of the server; only a crash of the host can lose the last ones, and that
                // ends their sandboxes too, so no row is missed that reaping would need.
                st.execute("PRAGMA synchronous=NORMAL");
                st.execute("PRAGMA busy_timeout=5000");
                st.execute("CREATE TABLE IF NOT EXISTS sandboxes (id TEXT PRIMARY KEY, instance TEXT NOT NULL, "
                        + "created_at TEXT NOT NULL, spec TEXT NOT NULL)");
            }
            return new SandboxStore(db);
        } catch (SQLException e) {
            throw AirlockException.unavailable("cannot open the state database " + file + ": " + e.getMessage());
        }
    }

    public synchronized void insert(Row row) {
        try (PreparedStatement ps = db.prepareStatement("INSERT INTO sandboxes (id, instance, created_at, spec) VALUES (?, ?, ?, ?)")) {
            ps.setString(1, row.id());
            ps.setString(2, row.instance());
            ps.setString(3, row.createdAt().toString());
            ps.setString(4, row.specJson());
            ps.executeUpdate();
        } catch (SQLException e) {
            throw AirlockException.internal("cannot record sandbox " + row.id() + ": " + e.getMessage(), e);
        }
    }

    public synchronized void delete(String id) {
        try (PreparedStatement ps = db.prepareStatement("DELETE FROM sandboxes WHERE id = ?")) {
            ps.setString(1, id);
            ps.executeUpdate();
        } catch (SQLException e) {
            throw AirlockException.internal("cannot forget sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    /** Rows of instances other than {@code liveInstance}: what earlier servers left. */
    public synchronized List<Row> leftBy(String liveInstance) {
        List<Row> rows = new ArrayList<>();
        try (PreparedStatement ps = db.prepareStatement("SELECT id, instance, created_at, spec FROM sandboxes WHERE instance <> ?")) {
            ps.setString(1, liveInstance);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    rows.add(new Row(rs.getString(1), rs.getString(2), Instant.parse(rs.getString(3)), rs.getString(4)));
                }
            }
        } catch (SQLException e) {
            throw AirlockException.internal("cannot read the state database: " + e.getMessage(), e);
        }
        return rows;
    }

    @Override
    public synchronized void close() {
        try {
            db.close();
        } catch (SQLException ignored) {
            // closing at shutdown; nothing left to protect
        }
    }
}
