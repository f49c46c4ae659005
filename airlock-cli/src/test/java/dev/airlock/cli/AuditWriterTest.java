package dev.airlock.cli;

import dev.airlock.server.audit.Audit;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.audit.AuditRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The writer alone: many threads, more records than the queue holds, nothing dropped, one chain; and a reopened log continues it. */
class AuditWriterTest {

    @Test
    void aFloodFromManyThreadsIsWrittenWholeInOneChain(@TempDir Path dir) throws Exception {
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
        try (AuditReader reader = AuditReader.open(db)) {
            AuditReader.Verdict v = reader.verify();
            assertThat(v.ok()).as(v.problem()).isTrue();
            assertThat(v.records()).isEqualTo((long) threads * each);
            assertThat(reader.query(new AuditReader.Query("al-test-3", null, null, 0))).hasSize(each)
                    .allSatisfy(r -> assertThat(r.actor()).isEqualTo("cli"));
            assertThat(reader.query(new AuditReader.Query(null, null, null, 5))).extracting(AuditRecord::seq)
                    .containsExactly(39_996L, 39_997L, 39_998L, 39_999L, 40_000L);
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
            assertThat(v.records()).isEqualTo((long) threads * each + 1);
        }
    }
}
