package dev.airlock.server.store;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

/** Rows written behind the requests, in the order asked for, and all of them by the time the store is closed. */
class SandboxStoreTest {

    @TempDir
    Path dir;

    @Test
    void rowsWrittenBehindAreThereForTheNextServerInTheirOrder() {
        Path file = dir.resolve("airlock.db");
        try (SandboxStore store = SandboxStore.open(file)) {
            for (int i = 0; i < 1000; i++) {
                store.insert(new SandboxStore.Row("al-a-" + i, "a", Instant.EPOCH, "{}"));
            }
            for (int i = 0; i < 1000; i += 2) {
                store.delete("al-a-" + i);   // after its insert, though both may wait in one batch
            }
            assertThat(store.leftBy("b")).hasSize(500);
            store.insert(new SandboxStore.Row("al-a-last", "a", Instant.EPOCH, "{}"));
        }
        try (SandboxStore next = SandboxStore.open(file)) {
            assertThat(next.leftBy("b")).as("what close committed").hasSize(501)
                    .anyMatch(r -> r.id().equals("al-a-last")).noneMatch(r -> r.id().equals("al-a-0"));
            assertThat(next.leftBy("a")).isEmpty();
        }
    }

    @Test
    void aRowAskedForAfterCloseIsNotWrittenAndNothingHangs() {
        Path file = dir.resolve("airlock.db");
        SandboxStore store = SandboxStore.open(file);
        store.close();
        store.insert(new SandboxStore.Row("al-a-late", "a", Instant.EPOCH, "{}"));
        store.close();
        try (SandboxStore next = SandboxStore.open(file)) {
            assertThat(next.leftBy("b")).isEmpty();
        }
    }
}
