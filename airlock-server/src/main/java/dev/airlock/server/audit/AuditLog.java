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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The append-only, hash-chained audit log in the {@code audit} table of the state database.
 * Callers enqueue records (cheap: a digest and a map); one writer thread numbers them, chains
 * them and writes them in batches, in order. A full queue makes the caller wait at most
 * {@link #MAX_ENQUEUE_WAIT_MILLIS}; a record that still finds no room is dropped and counted, and
 * the count is written as one record of kind {@code audit} as soon as there is room. Requests that
 * can be repeated at will go through {@link #admitRepeat}, folded per source and window
 * ({@link RepeatWindows}). The writer also prunes by age and count ({@link AuditPruner}).
 * {@link #close()} writes everything enqueued before it returns.
 */
public final class AuditLog implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(AuditLog.class);
    static final int QUEUE = 8192;
    private static final int BATCH = 512;
    /** The longest a caller waits for room in a full queue before its record is dropped (and counted). */
    public static final long MAX_ENQUEUE_WAIT_MILLIS = 1000;
    /** How often the writer closes due aggregation windows when idle, and checks retention. */
    private static final long TICK_MILLIS = 1000;
    private static final long RETENTION_CHECK_MILLIS = 60_000;

    /** Fixed width, so that times compare as text: {@code 2026-11-29T23:00:00.000123Z}. */
    public static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSS'Z'").withZone(ZoneOffset.UTC);

    static final String SCHEMA = "CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY, time TEXT NOT NULL, kind TEXT NOT NULL, "
            + "actor TEXT NOT NULL, sandbox TEXT, detail TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)";

    /** A log that records nothing (services built without one, in unit tests). */
    public static final AuditLog NONE = new AuditLog();

    private sealed interface Entry permits Pending, Flush, Prune {
    }

    /** A record to write; its detail a {@link AuditRecord#snapshot}, written as canonical JSON by the writer, off the caller's thread. */
    private record Pending(Instant time, String kind, String actor, String sandbox, Object detail) implements Entry {
    }

    private record Flush(CountDownLatch done, boolean stop) implements Entry {
    }

    /** Closes every aggregation window and prunes now (tests; a flush does not close windows). */
    private record Prune(CountDownLatch done) implements Entry {
    }

    private final Connection db;
    private final BlockingQueue<Entry> queue;
    private final Thread writer;
    private final AuditSettings settings;
    private final RepeatWindows windows;
    private final AtomicLong dropped = new AtomicLong();
    private volatile boolean closed;
    private long lastSeq;
    private String lastHash;
    private long lastRetentionCheck;
    /** The seq the kept chain starts after (0 until something was pruned). */
    private long anchorSeq;
    /** The last record written, as other threads read it (a cluster node publishes it: {@link #head}). */
    private volatile Head head;

    /** The newest record of the chain: its seq and hash (seq 0 and the genesis hash for an empty log). */
    public record Head(long seq, String hash) {
    }

    private AuditLog() {
        this.db = null;
        this.queue = null;
        this.writer = null;
        this.settings = AuditSettings.DEFAULTS;
        this.windows = null;
    }

    private AuditLog(Connection db, long lastSeq, String lastHash, long anchorSeq, AuditSettings settings) {
        this.db = db;
        this.anchorSeq = anchorSeq;
        this.lastSeq = lastSeq;
        this.lastHash = lastHash;
        this.head = new Head(lastSeq, lastHash);
        this.settings = settings;
        this.windows = new RepeatWindows(settings.window());
        this.queue = new ArrayBlockingQueue<>(QUEUE);
        this.writer = Thread.ofPlatform().daemon().name("airlock-audit-writer").start(this::writeLoop);
    }

    /** Opens (creating the table if needed) the log in the SQLite file {@code file}, with the default settings. */
    public static AuditLog open(Path file) {
        return open(file, AuditSettings.DEFAULTS);
    }

    /** Opens (creating the table if needed) the log in the SQLite file {@code file}. */
    public static AuditLog open(Path file, AuditSettings settings) {
        try {
            // Every transaction takes the write lock when it begins, so a batch reads the chain's tail
            // and appends to it with no other process (another server on this data directory) between.
            java.util.Properties properties = new java.util.Properties();
            properties.setProperty("transaction_mode", "IMMEDIATE");
            Connection db = DriverManager.getConnection("jdbc:sqlite:" + file, properties);
            try (Statement st = db.createStatement()) {
                st.execute("PRAGMA journal_mode=WAL");
                st.execute("PRAGMA busy_timeout=5000");
                st.execute(SCHEMA);
                st.execute("CREATE INDEX IF NOT EXISTS audit_sandbox ON audit (sandbox)");
                st.execute("CREATE INDEX IF NOT EXISTS audit_kind ON audit (kind)");
                st.execute("CREATE INDEX IF NOT EXISTS audit_time ON audit (time)");
                st.execute(AuditPruner.ANCHOR_SCHEMA);
                AuditPruner.Anchor anchor = AuditPruner.anchor(db);
                long seq = anchor.seq();
                String hash = anchor.hash();
                try (ResultSet rs = st.executeQuery("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")) {
                    if (rs.next()) {
                        seq = rs.getLong(1);
                        hash = rs.getString(2);
                    }
                }
                return new AuditLog(db, seq, hash, anchor.seq(), settings);
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

    /**
     * Records an event. Waits at most {@link #MAX_ENQUEUE_WAIT_MILLIS} for room in a full queue;
     * then drops the record and counts it (the count is written as a record of its own).
     */
    public void record(String kind, String actor, String sandbox, Map<String, ?> detail) {
        if (queue == null) {
            return;
        }
        Pending p = new Pending(Instant.now(), kind, actor, sandbox, AuditRecord.snapshot(detail));
        if (closed) {
            LOG.warn("audit log closed: {} record of {} for sandbox {} not written", kind, actor, sandbox);
            return;
        }
        enqueue(p);
    }

    /**
     * A request that can be repeated at will (a refusal an outsider can send, a refused egress
     * connection, a request through a preview link, a read the console polls), folded per
     * {@code source} and window. True when it is the first of its window: the caller records it in
     * full. Otherwise it was counted, with {@code sample} (what differs between such requests) among
     * a few distinct ones kept, and one record of {@code kind} with {@code base} and the count is
     * written when the window closes.
     */
    public boolean admitRepeat(String source, String kind, String actor, String sandbox, Map<String, Object> base, String sample) {
        return admitRepeat(source, null, kind, actor, sandbox, base, sample);
    }

    /** As {@link #admitRepeat(String, String, String, String, Map, String)}, with a window of {@code window} (null: the log's). */
    public boolean admitRepeat(String source, java.time.Duration window, String kind, String actor, String sandbox, Map<String, Object> base,
                               String sample) {
        return queue == null || windows.admit(source, Instant.now(), window, kind, actor, sandbox, base, sample);
    }

    /** Records dropped because the queue stayed full (since the last count was written). */
    public long droppedSinceLastCount() {
        return dropped.get();
    }

    private void enqueue(Entry e) {
        if (queue.offer(e)) {
            return;
        }
        try {
            // Once a record was dropped, the writer is known to be stuck: later callers do not wait too.
            if (dropped.get() == 0 && queue.offer(e, MAX_ENQUEUE_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                return;
            }
        } catch (InterruptedException ie) {
            Thread.currentThread().interrupt(); // a cancelled call keeps its interrupt; the record is counted as dropped
        }
        if (dropped.getAndIncrement() == 0) {
            LOG.error("audit queue full ({} records) for {} ms: dropping records and counting them", QUEUE, MAX_ENQUEUE_WAIT_MILLIS);
        }
    }

    /** Closes every aggregation window (writing its count) and prunes by age and count, now; waits for it. */
    public boolean closeWindowsAndPrune(long timeoutMillis) throws InterruptedException {
        if (queue == null || closed) {
            return true;
        }
        CountDownLatch done = new CountDownLatch(1);
        queue.put(new Prune(done));
        return done.await(timeoutMillis, TimeUnit.MILLISECONDS);
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
                Entry first = queue.poll(TICK_MILLIS, TimeUnit.MILLISECONDS);
                if (first != null) {
                    batch.add(first);
                }
            } catch (InterruptedException e) {
                continue; // only close() ends the writer, with a stop entry
            }
            queue.drainTo(batch, BATCH - 1);
            boolean closeAll = batch.stream().anyMatch(e -> e instanceof Prune || e instanceof Flush f && f.stop());
            List<Pending> own = ownRecords(closeAll);
            if (!batch.isEmpty() || !own.isEmpty()) {
                write(batch, own);
            }
            if (closeAll || System.currentTimeMillis() - lastRetentionCheck > RETENTION_CHECK_MILLIS
                    || lastSeq - anchorSeq > settings.maxRecords() + pruneSlack()) {
                prune();
            }
            for (Entry e : batch) {
                if (e instanceof Flush f) {
                    f.done().countDown();
                    stop |= f.stop();
                } else if (e instanceof Prune p) {
                    p.done().countDown();
                }
            }
            batch.clear();
        }
    }

    /** The log's own records: counts of closed aggregation windows, and of records dropped on a full queue. */
    private List<Pending> ownRecords(boolean closeAll) {
        List<Pending> own = new ArrayList<>();
        Instant now = Instant.now();
        for (RepeatWindows.Summary s : closeAll ? windows.closeAll(now) : windows.closeDue(now)) {
            own.add(new Pending(s.time(), s.kind(), s.actor(), s.sandbox(), AuditRecord.snapshot(s.detail())));
        }
        long lost = dropped.getAndSet(0);
        if (lost > 0) {
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("event", "dropped");
            d.put("records", lost);
            d.put("reason", "the queue of " + QUEUE + " records stayed full for " + MAX_ENQUEUE_WAIT_MILLIS + " ms");
            own.add(new Pending(now, AuditRecord.AUDIT, Audit.SERVER, null, AuditRecord.snapshot(d)));
        }
        return own;
    }

    /** Cuts by age and count; the cut is itself recorded, with the anchor it left. */
    private void prune() {
        lastRetentionCheck = System.currentTimeMillis();
        try {
            AuditPruner.Cut cut = AuditPruner.prune(db, lastSeq, settings, pruneSlack(), Instant.now());
            if (cut == null) {
                return;
            }
            anchorSeq = cut.through();
            LOG.info("audit log: pruned {} records (seq {} to {}) by {}", cut.records(), cut.from(), cut.through(), cut.reason());
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("event", "pruned");
            d.put("records", cut.records());
            d.put("fromSeq", cut.from());
            d.put("throughSeq", cut.through());
            d.put("throughHash", cut.throughHash());
            d.put("reason", cut.reason());
            d.put("retentionSeconds", settings.retention().toSeconds());
            d.put("maxRecords", settings.maxRecords());
            write(List.of(), List.of(new Pending(Instant.now(), AuditRecord.AUDIT, Audit.SERVER, null, AuditRecord.snapshot(d))));
        } catch (SQLException e) {
            LOG.error("cannot prune the audit log: {}", e.getMessage());
        }
    }

    /** Records over the cap before a cut: 1% (at least one batch), so the cap is not cut at every batch. */
    private long pruneSlack() {
        return Math.max(BATCH, settings.maxRecords() / 100);
    }

    private void write(List<Entry> batch, List<Pending> own) {
        List<Pending> records = new ArrayList<>();
        for (Entry e : batch) {
            if (e instanceof Pending p) {
                records.add(p);
            }
        }
        records.addAll(own);
        long seq = lastSeq;
        String hash = lastHash;
        int written = 0;
        for (int attempt = 1; attempt <= 3; attempt++) {
            written = 0;
            try (PreparedStatement ps = db.prepareStatement(
                    "INSERT INTO audit (seq, time, kind, actor, sandbox, detail, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")) {
                db.setAutoCommit(false);
                // the tail as the file has it now: another process may have appended since this one last wrote
                seq = lastSeq;
                hash = lastHash;
                try (Statement st = db.createStatement();
                     ResultSet rs = st.executeQuery("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")) {
                    if (rs.next() && rs.getLong(1) > seq) {
                        seq = rs.getLong(1);
                        hash = rs.getString(2);
                    }
                }
                for (Pending p : records) {
                    AuditRecord r = new AuditRecord(seq + 1, TIME.format(p.time()), p.kind(), p.actor(), p.sandbox(),
                            AuditRecord.canonicalJson(p.detail()), hash, null);
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
                // back to autocommit: between batches this process holds no lock another writer waits for
                db.setAutoCommit(true);
                lastSeq = seq;
                lastHash = hash;
                head = new Head(seq, hash);
                return;
            } catch (SQLException e) {
                try {
                    db.rollback();
                    db.setAutoCommit(true);
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

    /** The newest record written so far; null for {@link #NONE}. */
    public Head head() {
        return head;
    }

    /** How long records are kept (older ones are pruned). */
    public java.time.Duration retention() {
        return settings.retention();
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
