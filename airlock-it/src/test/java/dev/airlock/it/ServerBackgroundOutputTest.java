package dev.airlock.it;

import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Hostile tests of what background processes can make the server hold: their output goes to
 * files in the data directory, never the heap, and a sandbox keeps a bounded list of them however
 * many it starts.
 */
class ServerBackgroundOutputTest {

    private static final long MIB = 1024 * 1024;
    /** The sandboxes' output limit: each process may keep this much of each stream. */
    private static final long OUTPUT_LIMIT = 128 * MIB;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private static LiveServer live;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void startServer() {
        live = LiveServer.withPolicy("""
                profiles:
                  default:
                    limits: {outputLimit: 128m, timeoutSeconds: 300}
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
                """, c -> c);
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    @Test
    void fourProcessesOf128MiBOutputEachStayOnDiskNotInTheHeap() throws Exception {
        try (RemoteSandbox sandbox = live.client.create()) {
            long before = heapAfterGc();
            List<BackgroundProcess> started = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                // 136 MiB of stdout against a 128 MiB output limit, and a line of stderr
                started.add(sandbox.start(Exec.command("sh", "-c", "head -c 142606336 /dev/zero; echo done >&2")
                        .timeout(Duration.ofSeconds(300))));
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(240).toNanos();
            while (started.stream().anyMatch(p -> p.refresh().isRunning())) {
                assertThat(System.nanoTime()).as("the four processes ended").isLessThan(deadline);
                assertHealthAnswersWithinASecond();
                Thread.sleep(500);
            }

            HttpResponse<String> list = live.raw("GET", "/v1/sandboxes/" + sandbox.id() + "/processes", null);
            assertThat(list.statusCode()).isEqualTo(200);
            JsonNode processes = JSON.readTree(list.body()).get("processes");
            assertThat(processes).hasSize(4);
            for (JsonNode p : processes) {
                assertThat(p.get("stdoutBytes").asLong()).as("stdout kept: the output limit").isEqualTo(OUTPUT_LIMIT);
                assertThat(p.get("stderrBytes").asLong()).isEqualTo(5);
                assertThat(p.get("result").get("truncated").asBoolean()).isTrue();
                assertThat(p.get("result").has("stdout")).as("a list carries no output").isFalse();
            }
            HttpResponse<String> one = live.raw("GET", "/v1/sandboxes/" + sandbox.id() + "/processes/" + started.getFirst().id(), null);
            assertThat(one.statusCode()).isEqualTo(200);
            JsonNode result = JSON.readTree(one.body()).get("result");
            assertThat(result.get("stdout").asString()).hasSize(64 * 1024);
            assertThat(result.get("stderr").asString()).isEqualTo("done\n");

            long grown = heapAfterGc() - before;
            System.out.printf("heap growth after 4 x 128 MiB of background output: %.1f MiB%n", grown / (double) MIB);
            assertThat(grown).as("heap growth after 4 x 128 MiB of background output, in bytes").isLessThan(16 * MIB);

            for (BackgroundProcess p : started) {
                assertThat(streamedStdout(p)).isEqualTo(OUTPUT_LIMIT);
                ByteArrayOutputStream err = new ByteArrayOutputStream();
                p.stderr(err);
                assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo("done\n");
            }
            assertThat(spilledFiles()).hasSize(8);
        }
        assertThat(spilledFiles()).as("the output files went with the sandbox").isEmpty();
    }

    @Test
    void moreProcessesThanTheCapEvictTheOldestEndedAndTheListStaysBounded() throws Exception {
        try (RemoteSandbox sandbox = live.client.create()) {
            BackgroundProcess longLived = sandbox.start(Exec.command("sleep", "600"));
            List<BackgroundProcess> quick = new ArrayList<>();
            for (int i = 0; i < 150; i++) {
                BackgroundProcess p = sandbox.start(Exec.command("sh", "-c", "echo " + i));
                quick.add(p);
                if (i % 10 == 9) {
                    // let the batch end, so that only the running one is spared from eviction
                    Optional<ExecResult> r = p.waitFor(Duration.ofSeconds(30));
                    assertThat(r).isPresent();
                }
            }
            assertThat(quick.getLast().waitFor(Duration.ofSeconds(30))).isPresent();
            BackgroundProcess newest = sandbox.start(Exec.command("sh", "-c", "echo newest"));
            assertThat(newest.waitFor(Duration.ofSeconds(30)).orElseThrow().stdout()).isEqualTo("newest\n");

            List<BackgroundProcess> listed = sandbox.processes();
            assertThat(listed).as("processes kept: the cap of 128").hasSize(128);
            assertThat(listed.getFirst().id()).as("the running one is never evicted").isEqualTo(longLived.id());
            assertThat(listed.getLast().id()).isEqualTo(newest.id());
            assertThat(listed).extracting(BackgroundProcess::id).doesNotContain(quick.getFirst().id());
            assertThatThrownBy(() -> sandbox.process(quick.getFirst().id())).isInstanceOf(NotFoundException.class)
                    .hasMessageContaining("only the newest are kept");
            assertThat(sandbox.process(quick.getLast().id()).result().orElseThrow().stdout()).isEqualTo("149\n");
            assertThat(spilledFiles()).as("the files of evicted processes are gone").hasSize(2 * 128);
            longLived.kill();
        }
    }

    @Test
    void theOutputOneSandboxsProcessesStoreIsCutAtEightOutputLimits() throws Exception {
        try (RemoteSandbox sandbox = live.client.create(SandboxSpec.builder().outputLimit("1m").build())) {
            List<BackgroundProcess> started = new ArrayList<>();
            for (int i = 0; i < 12; i++) {
                started.add(sandbox.start(Exec.command("head", "-c", "1048576", "/dev/zero")));
            }
            for (BackgroundProcess p : started) {
                assertThat(p.waitFor(Duration.ofSeconds(60))).isPresent();
            }
            JsonNode processes = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + sandbox.id() + "/processes", null).body()).get("processes");
            long stored = 0;
            int cut = 0;
            for (JsonNode p : processes) {
                stored += p.get("stdoutBytes").asLong();
                if (p.get("result").get("truncated").asBoolean()) {
                    cut++;
                }
            }
            assertThat(stored).as("bytes stored for the sandbox's 12 processes of 1 MiB each").isEqualTo(8 * MIB);
            assertThat(cut).as("processes whose output was cut (4 MiB in all was dropped)").isGreaterThanOrEqualTo(4);
            long onDisk = 0;
            for (Path f : spilledFiles()) {
                onDisk += Files.size(f);
            }
            assertThat(onDisk).isEqualTo(8 * MIB);
        }
    }

    private void assertHealthAnswersWithinASecond() throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(live.uri() + "/health")).timeout(Duration.ofSeconds(1)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
    }

    /** What the SDK streams of a process's stdout, checked byte by byte against what it wrote (zeros), counted. */
    private static long streamedStdout(BackgroundProcess p) {
        long[] n = {0};
        long copied = p.stdout(new OutputStream() {
            @Override
            public void write(int b) {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                for (int i = off; i < off + len; i++) {
                    if (b[i] != 0) {
                        throw new AssertionError("byte " + (n[0] + i - off) + " of stdout is not what the process wrote");
                    }
                }
                n[0] += len;
            }
        });
        assertThat(copied).isEqualTo(n[0]);
        return n[0];
    }

    /** Every output file of this server's processes now. */
    private static List<Path> spilledFiles() throws IOException {
        Path root = live.dataDir.resolve("processes");
        if (!Files.exists(root)) {
            return List.of();
        }
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(Files::isRegularFile).toList();
        }
    }

    private static long heapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
