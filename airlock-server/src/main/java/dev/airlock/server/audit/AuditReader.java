package dev.airlock.server.audit;

import dev.airlock.core.AirlockException;

import java.nio.file.Files;
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
import java.util.function.Consumer;

/**
 * Reads the audit log, also while a server writes it (SQLite WAL): queries for
 * {@code airlock audit}, and the chain check of {@code airlock audit verify}.
 */
public final class AuditReader implements AutoCloseable {

    /**
     * Which records to read; null fields do not filter. {@code limit} &gt; 0 keeps the newest that
     * many. {@code client} keeps the records filed under that client ({@code <client>@<door>}).
     */
    public record Query(String sandbox, String kind, Instant since, int limit, String client, Instant until, Long before, String text) {
        public Query(String sandbox, String kind, Instant since, int limit) {
            this(sandbox, kind, since, limit, null, null, null, null);
        }
    }

    /**
     * The first break in the chain, or null fields when the chain is whole. {@code fromSeq} is where
     * the check started: 1, or the first record after the anchor that pruning left ({@code pruned}
     * records cut before it).
     */
    public record Verdict(long records, Long brokenSeq, String problem, long fromSeq, long pruned) {
        public Verdict(long records, Long brokenSeq, String problem) {
            this(records, brokenSeq, problem, 1, 0);
        }

        public boolean ok() {
            return brokenSeq == null;
        }
    }

    private final Connection db;

    private AuditReader(Connection db) {
        this.db = db;
    }

    public static AuditReader open(Path file) {
        if (!Files.isRegularFile(file)) {
            throw AirlockException.unavailable("no state database at " + file + ": give the server's --data-dir");
        }
        try {
            Connection db = DriverManager.getConnection("jdbc:sqlite:" + file);
            try (Statement st = db.createStatement()) {
                st.execute("PRAGMA busy_timeout=5000");
                try (ResultSet rs = st.executeQuery("SELECT name FROM sqlite_master WHERE type='table' AND name='audit'")) {
                    if (!rs.next()) {
                        db.close();
                        throw AirlockException.unavailable(file + " holds no audit log (written by a server that predates it?)");
                    }
                }
            }
            return new AuditReader(db);
        } catch (SQLException e) {
            throw AirlockException.unavailable("cannot open " + file + ": " + e.getMessage());
        }
    }

    /**
     * Matching records, oldest first: with a {@code limit}, the newest that many (and with {@code
     * before}, of those numbered below it: the page before one shown); {@code text} keeps the records
     * whose actor, sandbox or detail holds it.
     */
    public List<AuditRecord> query(Query q) {
        StringBuilder where = new StringBuilder(" WHERE 1=1");
        List<String> args = new ArrayList<>();
        if (q.sandbox() != null) {
            where.append(" AND sandbox = ?");
            args.add(q.sandbox());
        }
        if (q.kind() != null) {
            where.append(" AND kind = ?");
            args.add(q.kind());
        }
        if (q.since() != null) {
            where.append(" AND time >= ?");
            args.add(AuditLog.TIME.format(q.since()));
        }
        if (q.client() != null) {
            where.append(" AND substr(actor, 1, length(?) + 1) = ? || '@'");
            args.add(q.client());
            args.add(q.client());
        }
        if (q.until() != null) {
            where.append(" AND time <= ?");
            args.add(AuditLog.TIME.format(q.until()));
        }
        if (q.before() != null) {
            where.append(" AND seq < ?");
            args.add(Long.toString(q.before()));
        }
        if (q.text() != null) {
            // the text anywhere in the actor, the sandbox or the detail, as typed (no wildcard of its own)
            where.append(" AND (instr(actor, ?) > 0 OR instr(coalesce(sandbox, ''), ?) > 0 OR instr(detail, ?) > 0)");
            args.add(q.text());
            args.add(q.text());
            args.add(q.text());
        }
        String sql = "SELECT seq, time, kind, actor, sandbox, detail, prev_hash, hash FROM audit" + where
                + (q.limit() > 0 ? " ORDER BY seq DESC LIMIT " + q.limit() : " ORDER BY seq");
        List<AuditRecord> out = new ArrayList<>();
        try (PreparedStatement ps = db.prepareStatement(sql)) {
            for (int i = 0; i < args.size(); i++) {
                ps.setString(i + 1, args.get(i));
            }
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(row(rs));
                }
            }
        } catch (SQLException e) {
            throw AirlockException.internal("cannot read the audit log: " + e.getMessage(), e);
        }
        if (q.limit() > 0) {
            java.util.Collections.reverse(out);
        }
        return out;
    }

    private static AuditRecord row(ResultSet rs) throws SQLException {
        return new AuditRecord(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4), rs.getString(5),
                rs.getString(6), rs.getString(7), rs.getString(8));
    }

    /**
     * Recomputes the chain from seq 1, or from the anchor pruning left (the seq and hash of the last
     * record cut), and stops at the first record that does not fit.
     */
    public Verdict verify() {
        return verify(r -> { });
    }

    public Verdict verify(Consumer<AuditRecord> each) {
        AuditPruner.Anchor anchor;
        try {
            anchor = AuditPruner.anchor(db);
        } catch (SQLException e) {
            throw AirlockException.internal("cannot read the audit log's anchor: " + e.getMessage(), e);
        }
        long from = anchor.seq() + 1;
        long expectedSeq = from;
        String prev = anchor.hash();
        long count = 0;
        try (Statement st = db.createStatement();
             ResultSet rs = st.executeQuery("SELECT seq, time, kind, actor, sandbox, detail, prev_hash, hash FROM audit ORDER BY seq")) {
            while (rs.next()) {
                AuditRecord r = row(rs);
                if (r.seq() != expectedSeq) {
                    return new Verdict(count, expectedSeq, (r.seq() > expectedSeq
                            ? "record seq " + expectedSeq + (r.seq() - expectedSeq > 1 ? " to " + (r.seq() - 1) : "")
                              + " missing: seq " + (expectedSeq - 1) + " is followed by seq " + r.seq() + " (deleted?)"
                            : "record seq " + r.seq() + " out of order: expected seq " + expectedSeq)
                            + (expectedSeq == from && from > 1 ? " (the anchor left by pruning says the chain starts at seq " + from + ")" : ""),
                            from, anchor.pruned());
                }
                if (!prev.equals(r.prevHash())) {
                    return new Verdict(count, r.seq(), "record seq " + r.seq() + ": prev_hash differs: stored " + r.prevHash()
                            + ", the previous record's hash is " + prev + (r.seq() == from && from > 1 ? " (the anchor left by pruning)" : ""),
                            from, anchor.pruned());
                }
                String computed = r.computeHash();
                if (!computed.equals(r.hash())) {
                    return new Verdict(count, r.seq(), "record seq " + r.seq() + " (" + r.kind() + "): hash differs: stored " + r.hash()
                            + ", computed " + computed + " (its seq, time, kind, actor, sandbox or detail was changed)", from, anchor.pruned());
                }
                each.accept(r);
                prev = r.hash();
                expectedSeq++;
                count++;
            }
        } catch (SQLException e) {
            throw AirlockException.internal("cannot read the audit log: " + e.getMessage(), e);
        }
        return new Verdict(count, null, null, from, anchor.pruned());
    }

    /** The head of a node's chain as the node published it to its cluster's database at {@code time} (docs/cluster.md). */
    public record ClusterAnchor(long seq, String hash, Instant time) {
    }

    /**
     * What a node's published anchors say of this log: {@code matched} anchors name a record this
     * log holds with the same hash, {@code beforeKept} name records pruned since; {@code brokenSeq}
     * is the lowest seq an anchor contradicts, null when none does.
     */
    public record AnchorVerdict(int matched, int beforeKept, Long brokenSeq, String problem) {
        public boolean ok() {
            return brokenSeq == null;
        }
    }

    /**
     * Checks this log against the anchors its node published: a chain recomputed after a record was
     * changed verifies on its own ({@link #verify}), but no longer has the hashes the node published
     * before the change; records cut from the end leave an anchor past the last one.
     */
    public AnchorVerdict checkAnchors(List<ClusterAnchor> anchors) {
        try {
            AuditPruner.Anchor pruned = AuditPruner.anchor(db);
            long last;
            try (Statement st = db.createStatement(); ResultSet rs = st.executeQuery("SELECT coalesce(max(seq), 0) FROM audit")) {
                rs.next();
                last = Math.max(rs.getLong(1), pruned.seq());
            }
            int matched = 0;
            int beforeKept = 0;
            try (PreparedStatement ps = db.prepareStatement("SELECT hash FROM audit WHERE seq = ?")) {
                for (ClusterAnchor a : anchors.stream().sorted(java.util.Comparator.comparingLong(ClusterAnchor::seq)).toList()) {
                    String held;
                    if (a.seq() < pruned.seq()) {
                        beforeKept++;
                        continue;
                    } else if (a.seq() == pruned.seq()) {
                        held = pruned.hash();
                    } else if (a.seq() > last) {
                        return new AnchorVerdict(matched, beforeKept, a.seq(), "the node published seq " + a.seq() + " at " + a.time()
                                + ", past this log's last record, seq " + last + ": records were cut from its end (or this is another node's log)");
                    } else {
                        ps.setLong(1, a.seq());
                        try (ResultSet rs = ps.executeQuery()) {
                            held = rs.next() ? rs.getString(1) : null;
                        }
                    }
                    if (!a.hash().equals(held)) {
                        return new AnchorVerdict(matched, beforeKept, a.seq(), "record seq " + a.seq() + (held == null ? " is missing" : " has hash " + held)
                                + ", but the node published " + a.hash() + " for it at " + a.time() + ": the log was rewritten at or before seq "
                                + a.seq() + " since (its chain recomputed, or the file replaced)");
                    }
                    matched++;
                }
            }
            return new AnchorVerdict(matched, beforeKept, null, null);
        } catch (SQLException e) {
            throw AirlockException.internal("cannot read the audit log: " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        try {
            db.close();
        } catch (SQLException ignored) {
            // read only
        }
    }
}
