package dev.airlock.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.stream.Stream;

/**
 * What this JVM (test and server in one) holds at a moment: heap after a full GC, open file
 * descriptors, platform threads, and the rows of the server's audit log. A soak compares a window
 * of these at its start with one at its end.
 */
record ProcessGauges(long heapAfterGc, int fileDescriptors, int threads, long auditRows) {

    private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();

    static ProcessGauges measure(Path auditDb) {
        return new ProcessGauges(usedHeapAfterGc(), openFileDescriptors(), ManagementFactory.getThreadMXBean().getThreadCount(), auditRows(auditDb));
    }

    /** Used heap after collections settle: the least of three full GCs, so garbage in flight does not count. */
    static long usedHeapAfterGc() {
        long least = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            least = Math.min(least, MEMORY.getHeapMemoryUsage().getUsed());
        }
        return least;
    }

    static int openFileDescriptors() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return (int) fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Rows in the audit table, read over a connection of its own (the writer must have flushed). */
    static long auditRows(Path auditDb) {
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + auditDb);
             Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT count(*) FROM audit")) {
            r.next();
            return r.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot count the audit rows of " + auditDb + ": " + e.getMessage(), e);
        }
    }
}
