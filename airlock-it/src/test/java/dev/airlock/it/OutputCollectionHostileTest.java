package dev.airlock.it;

import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.lang.management.ManagementFactory;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A sandbox's end, attacked through what it leaves in /workspace/output: a tree far above the
 * collection's bounds with a process that keeps working on it, and directories swapped for links
 * to wide host-like trees while they are collected. The bounds hold, the sandbox's processes die
 * first, other tenants' sandboxes expire on time, the sandbox keeps its slot until it is gone, and
 * the server keeps answering.
 */
class OutputCollectionHostileTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    /** From a TTL running out to the sandbox's processes being dead: the expiry loop ticks every 0.5 s. */
    private static final Duration MARGIN = Duration.ofSeconds(3);
    private static LiveServer live;

    @BeforeAll
    static void start() {
        live = LiveServer.start(c -> c.withPoolSize(0).withMaxSandboxes(2));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static void ok(ExecResult r) {
        assertThat(r.exitCode()).as(r.stdout() + r.stderr()).isZero();
    }

    /**
     * What of the sandbox remains on the host under its own id: runtime state, cgroup, state
     * directory, host id slot. (Its processes are found by its host ids, which a new sandbox may
     * get as soon as it is gone.)
     */
    private static List<String> remainsById(SandboxOnHost onHost) {
        return onHost.remains().stream().filter(r -> !r.startsWith("process:")).toList();
    }

    /** The sandbox's processes other than its agent, on the host. */
    private static List<String> codeProcesses(SandboxOnHost onHost) {
        return onHost.processes().stream().filter(p -> !p.contains("airlock-agent")).toList();
    }

    @Test
    void outputTreeOfFortyThousandDirectoriesIsCutAtItsBoundWhileItsProcessesDieAndOthersExpireOnTime() throws Exception {
        RemoteSandbox hog = live.client.create(SandboxSpec.builder().ttl(Duration.ofSeconds(12)).build());
        SandboxOnHost hogOnHost = SandboxOnHost.of(hog.id());
        // Four times the entry bound in empty directories, and a process that keeps adding more.
        ok(hog.exec(Exec.command("python3", "-c", """
                import os
                for i in range(200):
                    for j in range(200):
                        os.makedirs(f'/workspace/output/t{i}/d{j}')
                """).timeout(Duration.ofSeconds(60))));
        hog.start(Exec.command("sh", "-c", "i=0; while :; do mkdir -p /workspace/output/more/$i; i=$((i+1)); done")
                .timeout(Duration.ofMinutes(10)));
        hog.start(Exec.command("sleep", "1000").timeout(Duration.ofMinutes(10)));
        Instant hogExpires = hog.info().expiresAt();

        // Another tenant's sandbox that expires a moment after the hog, while the hog is being destroyed.
        long victimTtl = Duration.between(Instant.now(), hogExpires).toSeconds() + 2;
        RemoteSandbox victim = live.client.create(SandboxSpec.builder().ttl(Duration.ofSeconds(victimTtl)).build());
        SandboxOnHost victimOnHost = SandboxOnHost.of(victim.id());
        victim.start(Exec.command("sleep", "1000").timeout(Duration.ofMinutes(10)));
        Instant victimExpires = victim.info().expiresAt();

        // A third tenant tries to create all along: it may get a sandbox only once one of the two is gone.
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger refused = new AtomicInteger();
        List<String> unexpected = new CopyOnWriteArrayList<>();
        List<String> createdWhileBothHeld = new CopyOnWriteArrayList<>();
        Thread third = Thread.ofVirtual().start(() -> {
            while (!stop.get()) {
                HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{}");
                if (r.statusCode() == 201) {
                    String id = JSON.readTree(r.body()).path("id").asString();
                    if (!remainsById(hogOnHost).isEmpty() && !remainsById(victimOnHost).isEmpty()) {
                        createdWhileBothHeld.add(id);
                    }
                    live.raw("DELETE", "/v1/sandboxes/" + id, null);
                } else if (r.statusCode() == 429 && r.body().contains("--max-sandboxes")) {
                    refused.incrementAndGet();
                } else {
                    unexpected.add(r.statusCode() + " " + r.body());
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        try (HealthWatch health = new HealthWatch(live.uri())) {
            await().atMost(Duration.between(Instant.now(), hogExpires.plus(MARGIN))).pollInterval(Duration.ofMillis(100))
                    .untilAsserted(() -> assertThat(codeProcesses(hogOnHost)).as("the hog's processes, dead by its TTL").isEmpty());
            await().atMost(Duration.between(Instant.now(), victimExpires.plus(MARGIN))).pollInterval(Duration.ofMillis(100))
                    .untilAsserted(() -> assertThat(remainsById(victimOnHost)).as("the victim, expired on time").isEmpty());
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(remainsById(hogOnHost)).isEmpty());
            health.assertKeptAnswering();
        } finally {
            stop.set(true);
            third.join();
        }
        assertThat(unexpected).as("answers other than 201 and 429").isEmpty();
        assertThat(createdWhileBothHeld).as("sandboxes created while both slots were held").isEmpty();
        assertThat(refused.get()).as("creates refused while both slots were held").isPositive();

        JsonNode manifest = JSON.readTree(live.raw("GET", "/v1/outputs/" + hog.id(), null).body());
        assertThat(manifest.path("entries").asInt()).isEqualTo(10_000);
        assertThat(manifest.path("cut").toString()).contains("entries: the walk stopped at 10000 entries");
        assertThat(manifest.path("files")).isEmpty();
    }

    @Test
    void directoriesSwappedForLinksToWideTreesDuringCollectionAreNeverFollowed() throws Exception {
        long heapBefore = usedHeapAfterGc();
        try (HealthWatch health = new HealthWatch(live.uri())) {
            for (int round = 0; round < 3; round++) {
                RemoteSandbox s = live.client.create(SandboxSpec.builder().ttl(Duration.ofMinutes(2)).build());
                ok(s.exec("sh", "-c", """
                        cd /workspace/output
                        for i in $(seq 0 49); do mkdir d$i; echo mine > d$i/mine-$i.txt; done
                        ln -s / root; ln -s /usr usr; ln -s /usr/bin d-static
                        """));
                // Swaps every listed directory for a link to /usr or / and back, as fast as it can.
                s.start(Exec.command("sh", "-c", """
                        cd /workspace/output
                        while :; do
                          for i in $(seq 0 49); do mv d$i x$i; ln -s /usr d$i; done
                          for i in $(seq 0 49); do rm d$i; ln -s / d$i; rm d$i; mv x$i d$i; done
                        done
                        """).timeout(Duration.ofMinutes(2)));
                Thread.sleep(300 + 400L * round);
                s.close();

                JsonNode manifest = JSON.readTree(live.raw("GET", "/v1/outputs/" + s.id(), null).body());
                List<String> collected = manifest.path("files").valueStream().map(f -> f.path("path").asString()).toList();
                assertThat(collected).as("collected files, round %d", round).hasSizeLessThanOrEqualTo(50)
                        .allSatisfy(p -> assertThat(p).matches("[dx]\\d+/mine-\\d+\\.txt"));
                assertThat(manifest.path("skipped").toString()).doesNotContain("usr", "bin/", "etc/");
            }
            health.assertKeptAnswering();
        }
        assertThat(usedHeapAfterGc() - heapBefore).as("heap growth in bytes").isLessThan(64L << 20);
    }

    @Test
    void outputTreeDeeperThanItsDepthBoundIsNotEntered() {
        RemoteSandbox s = live.client.create(SandboxSpec.builder().build());
        ok(s.exec("sh", "-c", "cd /workspace/output && echo top > top.txt && d=. && for i in $(seq 40); do d=$d/l$i; done"
                + " && mkdir -p $d && echo bottom > $d/bottom.txt"));
        s.close();

        JsonNode manifest = JSON.readTree(live.raw("GET", "/v1/outputs/" + s.id(), null).body());
        assertThat(manifest.path("files").valueStream().map(f -> f.path("path").asString())).containsExactly("top.txt");
        assertThat(manifest.path("cut").toString()).contains("depth: 1 directories 32 levels deep were not entered");
    }

    @Test
    void outputFolderReplacedByALinkToAWideTreeGivesNothing() {
        RemoteSandbox s = live.client.create(SandboxSpec.builder().build());
        ok(s.exec("sh", "-c", "rm -rf /workspace/output && ln -s /usr /workspace/output"));
        s.close();

        HttpResponse<String> r = live.raw("GET", "/v1/outputs/" + s.id(), null);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(404);
        assertThat(live.dataDir.resolve("outputs").resolve(s.id())).doesNotExist();
    }

    private static long usedHeapAfterGc() {
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
