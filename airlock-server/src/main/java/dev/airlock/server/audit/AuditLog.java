package dev.airlock.server.audit;

import dev.airlock.core.AirlockException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The append-only, hash-chained audit log in the {@code audit} table of the state database.
 * Callers enqueue records (cheap: a digest and a map); one writer thread numbers them, chains
 * them and writes them in batches, in order. A full queue blocks the caller until there is room:
 * a record is never dropped. {@link #close()} writes everything enqueued before it returns.
 */
public final class AuditLog implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(AuditLog.class);
    static final int QUEUE = 8192;
    private static final int BATCH = 512;

    /** Fixed width, so that times compare as text: {@code 2026-11-29T23:00:00.000123Z}. */
    public static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSS'Z'").withZone(ZoneOffset.UTC);

    static final String SCHEMA = "CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY, time TEXT NOT NULL, kind TEXT NOT NULL, "
            + "actor TEXT NOT NULL, sandbox TEXT, detail TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)";

    /** A log that records nothing (services built without one, in unit tests). */
    public static final AuditLog NONE = new AuditLog();

    private sealed interface Entry permits Pending, Flush {
    }

    private record Pending(Instant time, String kind, String actor, String sandbox, String detail) implements Entry {
    }

    private record Flush(CountDownLatch done, boolean stop) implements Entry {
    }

    private final Connection db;
    private final BlockingQueue<Entry> queue;
    private final Thread writer;
    private volatile boolean closed;
    private long lastSeq;
    private String lastHash;

    private AuditLog() {
        this.db = null;
        this.queue = null;
        this.writer = null;
    }

    private AuditLog(Connection db, long lastSeq, String lastHash) {
        this.db = db;
        this.lastSeq = lastSeq;
        this.lastHash = lastHash;
        this.queue = new ArrayBlockingQueue<>(QUEUE);
        this.writer = Thread.ofPlatform().daemon().name("airlock-audit-writer").start(this::writeLoop);
    }

    /** Opens (creating the table if needed) the log in the SQLite file {@code file}. */
    public static AuditLog open(Path file) {
        try {
            Connection db = DriverManager.getConnection("jdbc:sqlite:" + file);
            try (Statement st = db.createStatement()) {
                st.execute("PRAGMA journal_mode=WAL");
                st.execute("PRAGMA busy_timeout=5000");
                st.execute(SCHEMA);
                st.execute("CREATE INDEX IF NOT EXISTS audit_sandbox ON audit (sandbox)");
                st.execute("CREATE INDEX IF NOT EXISTS audit_kind ON audit (kind)");
                long seq = 0;
                String hash = AuditRecord.GENESIS;
                try (ResultSet rs = st.executeQuery("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")) {
                    if (rs.next()) {
                        seq = rs.getLong(1);
                        hash = rs.getString(2);
                    }
                }
                return new AuditLog(db, seq, hash);
            } catch (SQLException e) {
                db.close();
                throw e;
            }
        } catch (SQLException e) {
            throw AirlockException.unavailable("cannot open the audit log in " + file + ": " + e.getMessage());
        }
    }

    /** Records an event of the current thread's actor ({@link Audit#actor()}). */
    public void record(String kind, String sandbox, Map<String, ?> detail) {
        record(kind, Audit.actor(), sandbox, detail);
    }

    /** Records an event; blocks while the queue is full, never drops it. */
    public void record(String kind, String actor, String sandbox, Map<String, ?> detail) {
        if (queue == null) {
            return;
        }
        Pending p = new Pending(Instant.now(), kind, actor, sandbox, AuditRecord.canonicalDetail(detail));
        if (closed) {
            LOG.warn("audit log closed: {} record of {} for sandbox {} not written", kind, actor, sandbox);
            return;
        }
        if (queue.offer(p)) {
            return;
        }
        LOG.warn("audit queue full ({} records): waiting for the writer", QUEUE);
        boolean interrupted = false;
        while (true) {
            try {
                queue.put(p);
                break;
            } catch (InterruptedException e) {
                // a cancelled call still gets its record; the interrupt is kept for the caller
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Waits until every record enqueued before this call is written (at most {@code timeoutMillis}). */
    public boolean flush(long timeoutMillis) throws InterruptedException {
        if (queue == null || closed) {
            return true;
        }
        CountDownLatch done = new CountDownLatch(1);
        queue.put(new Flush(done, false));
        return done.await(timeoutMillis, TimeUnit.MILLISECONDS);
    }

    private void writeLoop() {
        List<Entry> batch = new ArrayList<>(BATCH);
        boolean stop = false;
        while (!stop) {
            try {
                batch.add(queue.take());
            } catch (InterruptedException e) {
                continue; // only close() ends the writer, with a stop entry
            }
            queue.drainTo(batch, BATCH - 1);
            write(batch);
            for (Entry e : batch) {
                if (e instanceof Flush f) {
                    f.done().countDown();
                    stop |= f.stop();
                }
            }
            batch.clear();
        }
    }

    private void write(List<Entry> batch) {
        long seq = lastSeq;
        String hash = lastHash;
        int written = 0;
        for (int attempt = 1; attempt <= 3; attempt++) {
            seq = lastSeq;
            hash = lastHash;
            written = 0;
            try (PreparedStatement ps = db.prepareStatement(
                    "INSERT INTO audit (seq, time, kind, actor, sandbox, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")) {
                db.setAutoCommit(false);
                for (Entry e : batch) {
                    if (!(e instanceof Pending p)) {
                        continue;
                    }
                    AuditRecord r = new AuditRecord(seq + 1, TIME.format(p.time()), p.kind(), p.actor(), p.sandbox(), p.detail(), hash, null);
                    String h = r.computeHash();
                    ps.setLong(1, r.seq());
                    ps.setString(2, r.time());
                    ps.setString(3, r.kind());
                    ps.setString(4, r.actor());
                    ps.setString(5, r.sandbox());
                    ps.setString(6, r.detail());
                    ps.setString(7, hash);
                    ps.setString(8, h);
                    ps.addBatch();
                    seq = r.seq();
                    hash = h;
                    written++;
                }
                if (written > 0) {
                    ps.executeBatch();
                }
                db.commit();
                lastSeq = seq;
                lastHash = hash;
                return;
            } catch (SQLException e) {
                try {
                    db.rollback();
                } catch (SQLException ignored) {
                    // the next attempt starts a new transaction
                }
                LOG.error("cannot write {} audit records (attempt {} of 3): {}", written, attempt, e.getMessage());
                try {
                    Thread.sleep(200L * attempt);
                } catch (InterruptedException ignored) {
                    // retry at once
                }
            }
        }
        LOG.error("LOST {} audit records after seq {}: the state database refuses writes", written, lastSeq);
    }

    /** Writes every record enqueued so far, then stops the writer and closes the connection. */
    @Override
    public void close() {
        if (queue == null || closed) {
            return;
        }
        closed = true;
        CountDownLatch done = new CountDownLatch(1);
        try {
            queue.put(new Flush(done, true));
            if (!done.await(30, TimeUnit.SECONDS)) {
                LOG.error("audit writer did not finish within 30s; {} records still queued", queue.size());
            }
            writer.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            db.close();
        } catch (SQLException ignored) {
            // shutting down
        }
    }
}
