package dev.airlock.server.audit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The audit log's own bounds, on a real SQLite file: the record cap and the retention cut the
 * oldest records and the chain still verifies from the anchor they leave; a writer that cannot
 * write never holds a caller longer than the enqueue bound, and what it dropped is counted.
 */
class AuditBoundsTest {

    private static final AuditSettings SMALL_CAP = new AuditSettings(Duration.ofDays(1), 1000, Duration.ofMinutes(1));

    private static AuditReader.Verdict verify(Path db) {
        try (AuditReader reader = AuditReader.open(db)) {
            return reader.verify();
        }
    }

    private static List<AuditRecord> records(Path db, String kind) {
        try (AuditReader reader = AuditReader.open(db)) {
            return reader.query(new AuditReader.Query(null, kind, null, 0));
        }
    }

    private static JsonNode detail(AuditRecord r) {
        return AuditRecord.JSON.readTree(r.detail());
    }

    @Test
    void theRecordCapCutsTheOldestAndTheChainStillVerifiesFromTheAnchor(@TempDir Path dir) throws Exception {
        Path db = dir.resolve("airlock.db");
        try (AuditLog log = AuditLog.open(db, SMALL_CAP)) {
            for (int i = 0; i < 20_000; i++) {
                log.record(AuditRecord.FILE, "cli", "al-cap", Map.of("i", i));
            }
            assertThat(log.closeWindowsAndPrune(30_000)).isTrue();
        }
        AuditReader.Verdict v = verify(db);
        assertThat(v.ok()).as(v.problem()).isTrue();
        assertThat(v.records()).isBetween(1000L, 1000L + 512 + 10);
        assertThat(v.fromSeq()).isGreaterThan(18_000);
        assertThat(v.pruned()).isEqualTo(v.fromSeq() - 1);
        List<AuditRecord> cuts = records(db, AuditRecord.AUDIT);
        assertThat(cuts).isNotEmpty();
        JsonNode last = detail(cuts.getLast());
        assertThat(last.path("event").asString()).isEqualTo("pruned");
        assertThat(last.path("reason").asString()).isEqualTo("maxRecords");
        assertThat(last.path("throughSeq").asLong()).isEqualTo(v.fromSeq() - 1);

        // a server started again on the same file continues the chain after the cut
        try (AuditLog log = AuditLog.open(db, SMALL_CAP)) {
            log.record(AuditRecord.LIFECYCLE, Audit.SERVER, "al-cap", Map.of("event", "reaped"));
        }
        AuditReader.Verdict again = verify(db);
        assertThat(again.ok()).as(again.problem()).isTrue();
        assertThat(again.records()).isEqualTo(v.records() + 1);
    }

    @Test
    void retentionCutsOldRecordsAndTheChainStillVerifies(@TempDir Path dir) throws Exception {
        Path db = dir.resolve("airlock.db");
        AuditSettings oneSecond = new AuditSettings(Duration.ofSeconds(1), 1000, Duration.ofMinutes(1));
        try (AuditLog log = AuditLog.open(db, oneSecond)) {
            for (int i = 0; i < 300; i++) {
                log.record(AuditRecord.FILE, "cli", "al-old", Map.of("i", i));
            }
            assertThat(log.flush(10_000)).isTrue();
            Thread.sleep(1500);
            for (int i = 0; i < 5; i++) {
                log.record(AuditRecord.FILE, "cli", "al-new", Map.of("i", i));
            }
            assertThat(log.closeWindowsAndPrune(30_000)).isTrue();
        }
        AuditReader.Verdict v = verify(db);
        assertThat(v.ok()).as(v.problem()).isTrue();
        assertThat(v.fromSeq()).isEqualTo(301);
        try (AuditReader reader = AuditReader.open(db)) {
            assertThat(reader.query(new AuditReader.Query("al-old", null, null, 0))).isEmpty();
            assertThat(reader.query(new AuditReader.Query("al-new", null, null, 0))).hasSize(5);
        }
        assertThat(detail(records(db, AuditRecord.AUDIT).getLast()).path("reason").asString()).isEqualTo("retention");
    }

    @Test
    void aRecordDeletedOrAnAnchorChangedAfterACutIsStillFound(@TempDir Path dir) throws Exception {
        Path db = dir.resolve("airlock.db");
        try (AuditLog log = AuditLog.open(db, SMALL_CAP)) {
            for (int i = 0; i < 3000; i++) {
                log.record(AuditRecord.FILE, "cli", "al-cut", Map.of("i", i));
            }
            assertThat(log.closeWindowsAndPrune(30_000)).isTrue();
        }
        AuditReader.Verdict v = verify(db);
        assertThat(v.ok()).as(v.problem()).isTrue();
        long first = v.fromSeq();
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement()) {
            st.execute("UPDATE audit_anchor SET hash = '" + "1".repeat(64) + "'");
        }
        AuditReader.Verdict forged = verify(db);
        assertThat(forged.ok()).isFalse();
        assertThat(forged.brokenSeq()).isEqualTo(first);
        assertThat(forged.problem()).contains("prev_hash differs", "anchor");
        // deleting the oldest kept record without moving the anchor leaves a gap verify names
        try (Connection c = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = c.createStatement()) {
            st.execute("DELETE FROM audit WHERE seq = " + first);
        }
        assertThat(verify(db).problem()).contains("record seq " + first + " missing");
    }

    @Test
    void aStuckWriterHoldsNoCallerPastTheBoundAndTheDropIsCounted(@TempDir Path dir) throws Exception {
        Path db = dir.resolve("airlock.db");
        int sent = 12_000; // more than the queue and one batch hold
        long[] callerMillis = new long[1];
        try (AuditLog log = AuditLog.open(db, AuditSettings.DEFAULTS)) {
            log.record(AuditRecord.LIFECYCLE, Audit.SERVER, null, Map.of("event", "start"));
            assertThat(log.flush(10_000)).isTrue();
            try (Connection lock = DriverManager.getConnection("jdbc:sqlite:" + db); Statement st = lock.createStatement()) {
                st.execute("PRAGMA busy_timeout=0");
                st.execute("BEGIN EXCLUSIVE"); // the writer's next insert now waits for this lock
                Thread producer = Thread.ofVirtual().start(() -> {
                    long start = System.nanoTime();
                    for (int i = 0; i < sent; i++) {
                        log.record(AuditRecord.FILE, "cli", "al-stuck", Map.of("i", i));
                    }
                    callerMillis[0] = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
                });
                assertThat(producer.join(Duration.ofSeconds(4))).as("the caller returned while the writer was stuck").isTrue();
                assertThat(log.droppedSinceLastCount()).isPositive();
                st.execute("ROLLBACK");
            }
        }
        assertThat(callerMillis[0]).as("ms the caller spent on %d records", sent).isLessThan(4000);
        AuditReader.Verdict v = verify(db);
        assertThat(v.ok()).as(v.problem()).isTrue();
        List<AuditRecord> counts = records(db, AuditRecord.AUDIT);
        assertThat(counts).hasSize(1);
        JsonNode d = detail(counts.getFirst());
        assertThat(d.path("event").asString()).isEqualTo("dropped");
        long dropped = d.path("records").asLong();
        try (AuditReader reader = AuditReader.open(db)) {
            long written = reader.query(new AuditReader.Query("al-stuck", null, null, 0)).size();
            assertThat(written + dropped).isEqualTo(sent);
            assertThat(dropped).isPositive();
        }
    }

    @Test
    void repeatedRefusalsOfOneSourceAreOneRecordAndACountPerWindow(@TempDir Path dir) throws Exception {
        Path db = dir.resolve("airlock.db");
        try (AuditLog log = AuditLog.open(db, AuditSettings.DEFAULTS)) {
            for (int i = 0; i < 5000; i++) {
                Map<String, Object> base = Map.of("decision", "deny");
                if (log.admitRepeat("sandbox al-a", AuditRecord.EGRESS, "egress-proxy", "al-a", base, "host" + (i % 40) + ":80")) {
                    log.record(AuditRecord.EGRESS, "egress-proxy", "al-a", Map.of("decision", "deny", "destination", "host0"));
                }
            }
            assertThat(log.flush(10_000)).isTrue();
            try (AuditReader reader = AuditReader.open(db)) {
                assertThat(reader.query(new AuditReader.Query("al-a", null, null, 0))).hasSize(1);
            }
        } // closing closes the window: its count is written
        List<AuditRecord> egress = records(db, AuditRecord.EGRESS);
        assertThat(egress).hasSize(2);
        JsonNode a = detail(egress.getLast()).path("aggregated");
        assertThat(a.path("repeats").asLong()).isEqualTo(4999);
        assertThat(a.path("samples").size()).isEqualTo(RepeatWindows.MAX_SAMPLES);
        long notSampled = java.util.stream.IntStream.range(1, 5000).filter(i -> i % 40 == 0 || i % 40 > RepeatWindows.MAX_SAMPLES).count();
        assertThat(a.path("repeatsNotSampled").asLong()).isEqualTo(notSampled);
        assertThat(verify(db).ok()).isTrue();
    }

    @Test
    void theBoundsAreSetFromTheEnvironmentAndABadValueSaysWhatToDo() {
        AuditSettings s = AuditSettings.fromEnvironment(Map.of("AIRLOCK_AUDIT_RETENTION_DAYS", "7", "AIRLOCK_AUDIT_MAX_RECORDS", "5000"));
        assertThat(s.retention()).isEqualTo(Duration.ofDays(7));
        assertThat(s.maxRecords()).isEqualTo(5000);
        assertThat(AuditSettings.fromEnvironment(Map.of())).isEqualTo(AuditSettings.DEFAULTS);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> AuditSettings.fromEnvironment(Map.of("AIRLOCK_AUDIT_MAX_RECORDS", "10")))
                .hasMessageContaining("AIRLOCK_AUDIT_MAX_RECORDS").hasMessageContaining("1000").hasMessageContaining("unset it");
    }
}
