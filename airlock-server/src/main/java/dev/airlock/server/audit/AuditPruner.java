package dev.airlock.server.audit;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;

/**
 * Cuts the oldest records of the audit log, past its retention or its record cap, and keeps the
 * chain verifiable across the cut: the seq and hash of the last record cut are kept as the
 * anchor ({@code audit_anchor}), from which {@code airlock audit verify} starts. Cuts in chunks of
 * {@link #CHUNK} records, one transaction each, so a large first cut never holds the database long
 * and every commit leaves the anchor matching the oldest record kept.
 */
final class AuditPruner {

    /** Records deleted per transaction. */
    static final int CHUNK = 10_000;

    static final String ANCHOR_SCHEMA = "CREATE TABLE IF NOT EXISTS audit_anchor (id INTEGER PRIMARY KEY CHECK (id = 1),"
            + " seq INTEGER NOT NULL, hash TEXT NOT NULL, time TEXT NOT NULL, pruned INTEGER NOT NULL)";

    /** Where the kept chain starts: after seq {@code seq}, whose hash was {@code hash}; {@code pruned} records cut in all. */
    record Anchor(long seq, String hash, long pruned) {
        static final Anchor NONE = new Anchor(0, AuditRecord.GENESIS, 0);
    }

    /** What one prune cut: records {@code from} to {@code through} (whose hash is {@code throughHash}). */
    record Cut(long records, long from, long through, String throughHash, String reason) {
    }

    private AuditPruner() {
    }

    static Anchor anchor(Connection db) throws SQLException {
        try (Statement st = db.createStatement();
             ResultSet rs = st.executeQuery("SELECT name FROM sqlite_master WHERE type='table' AND name='audit_anchor'")) {
            if (!rs.next()) {
                return Anchor.NONE;
            }
        }
        try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery("SELECT seq, hash, pruned FROM audit_anchor WHERE id = 1")) {
            return rs.next() ? new Anchor(rs.getLong(1), rs.getString(2), rs.getLong(3)) : Anchor.NONE;
        }
    }

    /**
     * Cuts what is older than {@code settings.retention()} before {@code now}, and the oldest records
     * beyond {@code settings.maxRecords()} when there are more than {@code slack} too many. Null
     * when nothing was cut.
     */
    static Cut prune(Connection db, long lastSeq, AuditSettings settings, long slack, Instant now) throws SQLException {
        Anchor anchor = anchor(db);
        long byCap = lastSeq - anchor.seq() > settings.maxRecords() + slack ? lastSeq - settings.maxRecords() : 0;
        long byAge = 0;
        try (PreparedStatement ps = db.prepareStatement("SELECT MAX(seq) FROM audit WHERE time < ?")) {
            ps.setString(1, AuditLog.TIME.format(now.minus(settings.retention())));
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    byAge = rs.getLong(1);
                }
            }
        }
        long cut = Math.max(byCap, byAge);
        if (cut <= anchor.seq()) {
            return null;
        }
        String reason = byAge >= byCap ? "retention" : "maxRecords";
        long from = anchor.seq() + 1;
        long pruned = anchor.pruned();
        String hash = anchor.hash();
        for (long start = from; start <= cut; start += CHUNK) {
            long end = Math.min(cut, start + CHUNK - 1);
            hash = hashOf(db, end);
            if (hash == null) {
                break; // nothing at that seq: the table was changed behind the server's back; verify will say so
            }
            boolean auto = db.getAutoCommit();
            db.setAutoCommit(false);
            try (PreparedStatement del = db.prepareStatement("DELETE FROM audit WHERE seq <= ?");
                 PreparedStatement anchorRow = db.prepareStatement("INSERT INTO audit_anchor (id, seq, hash, time, pruned) VALUES (1, ?, ?, ?, ?)"
                         + " ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, time = excluded.time, pruned = excluded.pruned")) {
                del.setLong(1, end);
                pruned += del.executeUpdate();
                anchorRow.setLong(1, end);
                anchorRow.setString(2, hash);
                anchorRow.setString(3, AuditLog.TIME.format(now));
                anchorRow.setLong(4, pruned);
                anchorRow.executeUpdate();
                db.commit();
            } catch (SQLException e) {
                db.rollback();
                throw e;
            } finally {
                db.setAutoCommit(auto);
            }
        }
        Anchor after = anchor(db);
        return after.seq() < from ? null : new Cut(after.pruned() - anchor.pruned(), from, after.seq(), after.hash(), reason);
    }

    private static String hashOf(Connection db, long seq) throws SQLException {
        try (PreparedStatement ps = db.prepareStatement("SELECT hash FROM audit WHERE seq = ?")) {
            ps.setLong(1, seq);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }
}
