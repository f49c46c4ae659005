package dev.airlock.server.store;

import dev.airlock.core.AirlockException;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

/**
 * The version of the layout of the data directory's database ({@code airlock.db}: the sandboxes'
 * rows, the audit log and its anchor), kept in SQLite's {@code user_version}. A server migrates an
 * older database when it starts, before anything reads it, one step per version, each in one
 * transaction with the version it reaches; it refuses a database of a newer layout, which an older
 * Airlock (a package downgraded) would misread. A fresh database is made at {@link #CURRENT} by the
 * tables' owners, which create what is missing.
 */
public final class DataSchema {

    /** The layout this Airlock reads and writes: 1, the tables as made since the first release. */
    public static final int CURRENT = 1;

    /**
     * What brings a database of version {@code i} (the index) to {@code i + 1}. Version 0 is a
     * database made before versions were kept, whose layout is version 1's: nothing to change.
     */
    private static final List<List<String>> STEPS = List.of(List.of());

    private DataSchema() {
    }

    /** Brings the database in {@code file} to {@link #CURRENT}; the version it had. */
    public static int migrate(Path file) {
        try (Connection db = DriverManager.getConnection("jdbc:sqlite:" + file); Statement st = db.createStatement()) {
            st.execute("PRAGMA busy_timeout=5000");
            int version;
            try (ResultSet rs = st.executeQuery("PRAGMA user_version")) {
                version = rs.next() ? rs.getInt(1) : 0;
            }
            if (version > CURRENT) {
                throw AirlockException.unavailable("the database " + file + " was written by a newer Airlock (its layout is version "
                        + version + ", this Airlock knows up to " + CURRENT + "): run that version again, or give this one another"
                        + " data directory (--data-dir)");
            }
            boolean fresh;
            try (ResultSet rs = st.executeQuery("SELECT count(*) FROM sqlite_master WHERE type = 'table'")) {
                fresh = rs.next() && rs.getInt(1) == 0;
            }
            if (fresh) {
                st.execute("PRAGMA user_version = " + CURRENT);
                return version;
            }
            for (int v = version; v < CURRENT; v++) {
                db.setAutoCommit(false);
                for (String sql : STEPS.get(v)) {
                    st.execute(sql);
                }
                st.execute("PRAGMA user_version = " + (v + 1));
                db.commit();
                db.setAutoCommit(true);
            }
            return version;
        } catch (SQLException e) {
            throw AirlockException.unavailable("cannot read the layout of the database " + file + ": " + e.getMessage());
        }
    }
}
