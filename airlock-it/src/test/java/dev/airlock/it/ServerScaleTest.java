package dev.airlock.it;

import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.EndReason;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxInfo;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Fifty sandboxes at once on one server: each is its own, and one misbehaving does not stop the rest. */
class ServerScaleTest {

    private static final int COUNT = 50;
    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(2).withMaxSandboxes(60));
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    /** Runs {@code task} for each element on its own virtual thread and returns the results in order. */
    private static <T, R> List<R> inParallel(List<T> items, Function<T, R> task) throws Exception {
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<R>> futures = new ArrayList<>();
            for (T item : items) {
                futures.add(threads.submit(() -> task.apply(item)));
            }
            List<R> results = new ArrayList<>();
            for (Future<R> f : futures) {
                results.add(f.get());
            }
            return results;
        }
    }

    /** How often the kernel refused a fork in the sandbox's pids cgroup (cgroup v1 or v2). */
    private static long pidsLimitHits(String id) {
        for (Path events : List.of(Path.of("/sys/fs/cgroup/pids/airlock", id, "pids.events"),
                Path.of("/sys/fs/cgroup/airlock", id, "pids.events"))) {
            try {
                for (String line : Files.readAllLines(events)) {
                    if (line.startsWith("max ")) {
                        return Long.parseLong(line.substring(4).trim());
                    }
                }
            } catch (IOException notThisHierarchy) {
                // try the other
            }
        }
        return 0;
    }

    @Test
    void fiftySandboxesAtOnceEachSeeOnlyItselfWhileAForkBombHitsItsPidsLimit() throws Exception {
        String run = UUID.randomUUID().toString();
        List<Integer> indexes = new ArrayList<>();
        for (int i = 0; i < COUNT; i++) {
            indexes.add(i);
        }
        List<RemoteSandbox> sandboxes = inParallel(indexes, i -> live.client.create(SandboxSpec.builder()
                .memory("64m").pids(64)
                .env("IDENTITY", "sandbox-" + i)
                .label("run", run).label("index", Integer.toString(i))
                .build()));
        try {
            assertThat(sandboxes).extracting(RemoteSandbox::id).doesNotHaveDuplicates().hasSize(COUNT);
            assertThat(live.client.list(Map.of("run", run))).extracting(SandboxInfo::id)
                    .containsExactlyInAnyOrderElementsOf(sandboxes.stream().map(RemoteSandbox::id).toList());
            for (RemoteSandbox s : sandboxes) {
                assertThat(s.initialInfo().limits().memoryBytes()).isEqualTo(64L << 20);
                assertThat(s.initialInfo().limits().pids()).isEqualTo(64);
            }

            // Sandbox 0 runs a fork bomb: every shell loops forking forever.
            RemoteSandbox bombed = sandboxes.getFirst();
            BackgroundProcess bomb = bombed.start(Exec.command("bash", "-c", "f() { while :; do f & done; }; f")
                    .timeout(Duration.ofMinutes(2)));
            await().atMost(Duration.ofSeconds(30)).until(() -> pidsLimitHits(bombed.id()) > 0);

            // Meanwhile each of the others proves it is itself: it writes its own file and sees only that one.
            List<RemoteSandbox> others = sandboxes.subList(1, COUNT);
            List<ExecResult> results = inParallel(others, s -> s.exec(Exec.command("sh", "-c",
                    "echo \"$IDENTITY\" > \"/workspace/$IDENTITY\"; ls -I output /workspace; cat /workspace/sandbox-*")));
            for (int i = 0; i < others.size(); i++) {
                String identity = "sandbox-" + (i + 1);
                assertThat(results.get(i).stdout()).as("what %s sees", identity).isEqualTo(identity + "\n" + identity + "\n");
                assertThat(results.get(i).exitCode()).isZero();
            }
            assertThat(bomb.refresh().isRunning()).as("the bomb ran all along").isTrue();
            assertThat(pidsLimitHits(bombed.id())).isGreaterThan(0);

            // Killing the bomb (everything it started) frees the sandbox again.
            bomb.kill();
            Optional<ExecResult> ended = bomb.waitFor(Duration.ofSeconds(30));
            assertThat(ended).isPresent();
            assertThat(ended.get().endReason()).isEqualTo(EndReason.SIGNALED);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(bombed.exec("echo", "recovered").stdout()).isEqualTo("recovered\n"));
        } finally {
            inParallel(sandboxes, s -> {
                s.close();
                return null;
            });
        }
        assertThat(live.client.list(Map.of("run", run))).isEmpty();
    }
}
