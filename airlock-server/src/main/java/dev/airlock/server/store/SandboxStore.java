package dev.airlock.server.store;

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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The server's durable memory of which sandboxes it created, in an embedded SQLite file. A server
 * killed without a chance to clean up leaves rows behind; the next start reads them, reaps the
 * sandboxes (the driver already removed their containers) and reports each one.
 *
 * <p>Rows are written behind the request, by one writer thread that commits whatever is waiting
 * in one transaction (a create's answer does not wait for SQLite: 1 to 10 ms of it on two cores),
 * in the order they were asked for. A server killed within those milliseconds of a create loses
 * that sandbox's row, as it loses an audit record not yet written; the driver still reaps the
 * sandbox (by its engine instance), only the report of it is missing. At most {@value #MAX_PENDING}
 * rows wait; past that a create or delete waits for room, so a stuck disk slows the server down and
 * never fills its heap.
 */
public final class SandboxStore implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxStore.class);
    static final int MAX_PENDING = 4096;
    /** Rows committed together at most. */
    private static final int BATCH = 256;
    private static final long CLOSE_WAIT_MILLIS = 10_000;

    /** One row: a sandbox a server instance created and had not yet destroyed. */
    public record Row(String id, String instance, Instant createdAt, String specJson) {
    }

    private sealed interface Op permits Insert, Delete, Flush {
    }

    private record Insert(Row row) implements Op {
    }

    private record Delete(String id) implements Op {
    }

    /** Done once everything enqueued before it is committed; {@code stop} ends the writer after it. */
    private record Flush(CountDownLatch done, boolean stop) implements Op {
    }

    private final Connection db;
    private final BlockingQueue<Op> pending = new LinkedBlockingQueue<>(MAX_PENDING);
    private final Thread writer;
    private volatile boolean closed;

    private SandboxStore(Connection db) {
        this.db = db;
        this.writer = Thread.ofPlatform().name("airlock-sandbox-store").daemon().start(this::writeRows);
    }

    public static SandboxStore open(Path file) {
        try {
            Connection db = DriverManager.getConnection("jdbc:sqlite:" + file);
            try (Statement st = db.createStatement()) {
                st.execute("PRAGMA journal_mode=WAL");
                // No fsync per commit: in WAL mode a commit survives a crash of the server; only a crash of
                // the host can lose the last ones, and that ends their sandboxes too, so no row is missed
                // that reaping would need.
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

    /** Records a created sandbox (written behind: see the class). */
    public void insert(Row row) {
        enqueue(new Insert(row));
    }

    /** Forgets a destroyed sandbox (written behind, after its insert). */
    public void delete(String id) {
        enqueue(new Delete(id));
    }

    private void enqueue(Op op) {
        if (closed) {
            LOG.warn("state database closed: {} not written", op);
            return;
        }
        try {
            pending.put(op);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            LOG.warn("interrupted while waiting for room in the state database's queue: {} not written", op);
        }
    }

    /** Waits until every row asked for before this call is committed, at most {@code timeoutMillis}. */
    boolean flush(long timeoutMillis) {
        return await(new Flush(new CountDownLatch(1), false), timeoutMillis);
    }

    private boolean await(Flush flush, long timeoutMillis) {
        if (!writer.isAlive()) {
            return pending.isEmpty();
        }
        try {
            pending.put(flush);
            return flush.done().await(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private void writeRows() {
        List<Op> batch = new ArrayList<>();
        while (true) {
            try {
                batch.add(pending.take());
            } catch (InterruptedException e) {
                return;
            }
            pending.drainTo(batch, BATCH - 1);
            commit(batch);
            boolean stop = false;
            for (Op op : batch) {
                if (op instanceof Flush f) {
                    f.done().countDown();
                    stop |= f.stop();
                }
            }
            batch.clear();
            if (stop) {
                return;
            }
        }
    }

    private synchronized void commit(List<Op> batch) {
        try {
            db.setAutoCommit(false);
            try (PreparedStatement insert = db.prepareStatement("INSERT INTO sandboxes (id, instance, created_at, spec) VALUES (?, ?, ?, ?)");
                 PreparedStatement delete = db.prepareStatement("DELETE FROM sandboxes WHERE id = ?")) {
                for (Op op : batch) {
                    switch (op) {
                        case Insert(Row row) -> {
                            insert.setString(1, row.id());
                            insert.setString(2, row.instance());
                            insert.setString(3, row.createdAt().toString());
                            insert.setString(4, row.specJson());
                            insert.executeUpdate();
                        }
                        case Delete(String id) -> {
                            delete.setString(1, id);
                            delete.executeUpdate();
                        }
                        case Flush f -> { }
                    }
                }
                db.commit();
            } catch (SQLException e) {
                db.rollback();
                throw e;
            } finally {
                db.setAutoCommit(true);
            }
        } catch (SQLException e) {
            LOG.error("cannot write {} sandbox rows to the state database: {} (a crash now would leave them unreported)", batch.size(),
                    e.getMessage());
        }
    }

    /** Rows of instances other than {@code liveInstance}: what earlier servers left. */
    public List<Row> leftBy(String liveInstance) {
        flush(CLOSE_WAIT_MILLIS);
        return read(liveInstance);
    }

    private synchronized List<Row> read(String liveInstance) {
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

    /** Commits what waits (at most {@value #CLOSE_WAIT_MILLIS} ms), then closes the database. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;   // a row asked for from now on is not written (and says so)
        if (!await(new Flush(new CountDownLatch(1), true), CLOSE_WAIT_MILLIS)) {
            LOG.warn("the state database's writer did not finish within {} ms: the rows it had left are not written", CLOSE_WAIT_MILLIS);
        }
        writer.interrupt();
        closeDatabase();
    }

    private synchronized void closeDatabase() {
        try {
            db.close();
        } catch (SQLException ignored) {
            // closing at shutdown; nothing left to protect
        }
    }
}
