package dev.airlock.server.audit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The writer alone: many threads, more records than the queue holds, one chain, and every record
 * either written or counted (a caller waits at most {@link AuditLog#MAX_ENQUEUE_WAIT_MILLIS} for
 * room, then its record is dropped and the count written); a reopened log continues the chain.
 */
class AuditWriterTest {

    /**
     * Two processes on one data directory (an {@code airlock serve} and the {@code airlock mcp}
     * sessions an agent starts, all with the default /var/lib/airlock) append to one chain: each
     * batch takes the database's write lock and continues from the last record in the file, not
     * from what its own process wrote last.
     */
    @Test
    void twoWritersOnOneFileKeepOneChain(@TempDir Path dir) throws Exception {
        Path db = dir.resolve("airlock.db");
        int each = 3_000;
        try (AuditLog first = AuditLog.open(db); AuditLog second = AuditLog.open(db)) {
            List<Thread> workers = new ArrayList<>();
            for (AuditLog log : List.of(first, second)) {
                for (int t = 0; t < 2; t++) {
                    workers.add(Thread.ofVirtual().start(() -> {
                        for (int i = 0; i < each; i++) {
                            log.record(AuditRecord.FILE, log == first ? "serve" : "mcp", null, Map.of("i", i));
                        }
                    }));
                }
            }
            for (Thread w : workers) {
                w.join();
            }
        }
        try (AuditReader reader = AuditReader.open(db)) {
            AuditReader.Verdict v = reader.verify();
            assertThat(v.ok()).as(v.problem()).isTrue();
            List<AuditRecord> counts = reader.query(new AuditReader.Query(null, AuditRecord.AUDIT, null, 0));
            assertThat(counts).as("nothing dropped").isEmpty();
            assertThat(reader.query(new AuditReader.Query(null, AuditRecord.FILE, null, 0))).hasSize(4 * each);
        }
    }

    /**
     * A record's detail is written as canonical JSON by the writer thread, off the caller's: what it
     * writes is the detail as it was when recorded, whatever the caller does to its map afterwards.
     */
    @Test
    void aRecordIsWrittenAsItsDetailWasWhenRecorded(@TempDir Path dir) throws Exception {
        Path db = dir.resolve("airlock.db");
        try (AuditLog log = AuditLog.open(db)) {
            java.util.Map<String, Object> detail = new java.util.HashMap<>();
            List<String> argv = new ArrayList<>(List.of("python3", "-c", "pass"));
            java.util.Map<String, Object> nested = new java.util.HashMap<>(Map.of("memory", "512m"));
            detail.put("zeta", 1);
            detail.put("argv", argv);
            detail.put("limits", nested);
            detail.put("skipped", null);
            log.record(AuditRecord.FILE, "cli", "al-test-snapshot", detail);
            detail.put("zeta", 2);
            argv.add("changed");
            nested.put("memory", "1g");
            log.flush(10_000);
        }
        try (AuditReader reader = AuditReader.open(db)) {
            List<AuditRecord> written = reader.query(new AuditReader.Query(null, AuditRecord.FILE, null, 0));
            assertThat(written).singleElement().extracting(AuditRecord::detail)
                    .isEqualTo("{\"argv\":[\"python3\",\"-c\",\"pass\"],\"limits\":{\"memory\":\"512m\"},\"zeta\":1}");
            assertThat(reader.verify().ok()).isTrue();
        }
    }

    @Test
    void aFloodFromManyThreadsIsWrittenOrCountedInOneChain(@TempDir Path dir) throws Exception {
        Path db = dir.resolve("airlock.db");
        int threads = 8;
        int each = 5_000; // 40000 records: several times the queue, so callers block on a full queue
        Instant before = Instant.now();
        try (AuditLog log = AuditLog.open(db)) {
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int n = t;
                workers.add(Thread.ofVirtual().start(() -> {
                    for (int i = 0; i < each; i++) {
                        log.record(AuditRecord.FILE, "cli", "al-test-" + n, Map.of("operation", "stat", "i", i));
                    }
                }));
            }
            for (Thread w : workers) {
                w.join();
            }
        } // close() writes everything queued
        long total;
        try (AuditReader reader = AuditReader.open(db)) {
            AuditReader.Verdict v = reader.verify();
            assertThat(v.ok()).as(v.problem()).isTrue();
            List<AuditRecord> counts = reader.query(new AuditReader.Query(null, AuditRecord.AUDIT, null, 0));
            long dropped = counts.stream().mapToLong(r -> JsonMapper.builder().build().readTree(r.detail()).path("records").asLong()).sum();
            long written = reader.query(new AuditReader.Query(null, AuditRecord.FILE, null, 0)).size();
            assertThat(written + dropped).as("records written, plus those counted as dropped").isEqualTo((long) threads * each);
            assertThat(v.records()).isEqualTo(written + counts.size());
            assertThat(reader.query(new AuditReader.Query("al-test-3", null, null, 0)))
                    .allSatisfy(r -> assertThat(r.actor()).isEqualTo("cli"));
            total = v.records();
            assertThat(reader.query(new AuditReader.Query(null, null, null, 5))).extracting(AuditRecord::seq)
                    .containsExactly(total - 4, total - 3, total - 2, total - 1, total);
            assertThat(reader.query(new AuditReader.Query(null, null, before, 1))).hasSize(1);
            assertThat(reader.query(new AuditReader.Query(null, null, Instant.now().plusSeconds(60), 0))).isEmpty();
        }
        // a second server on the same data directory continues the chain
        try (AuditLog log = AuditLog.open(db)) {
            log.record(AuditRecord.LIFECYCLE, Audit.SERVER, "al-test-0", Map.of("event", "reaped"));
        }
        try (AuditReader reader = AuditReader.open(db)) {
            AuditReader.Verdict v = reader.verify();
            assertThat(v.ok()).as(v.problem()).isTrue();
            assertThat(v.records()).isEqualTo(total + 1);
        }
    }
}
