package dev.airlock.it;

import dev.airlock.client.ConflictException;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxInfo;
import dev.airlock.client.SandboxSpec;
import dev.airlock.client.SnapshotInfo;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Snapshots through the real server and the Java SDK: files written before a snapshot are in every
 * sandbox restored or forked from it and nothing written after; forks are independent of each
 * other and of the original; a snapshot altered on the host is refused at restore; another
 * client's snapshot is not found; the client's quota and the snapshot's TTL hold.
 */
class ServerSnapshotTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String SMALL = "alk_small-token-0123456789abcdef01234567890";
    private static final String OTHER = "alk_other-token-0123456789abcdef01234567890";
    private static LiveServer live;

    private static String hash(String token) {
        return HexFormat.of().formatHex(Policy.sha256(token));
    }

    @BeforeAll
    static void start() {
        String ops = "[sandbox.create, sandbox.read, sandbox.destroy, exec, files.read, files.write, sandbox.snapshot]";
        live = LiveServer.withPolicy("""
                profiles:
                  default: {}
                  strong: {isolation: gvisor}
                  parked: {isolation: gvisor, onIdle: pauseToDisk}
                clients:
                  local: {tokenFile: token, profiles: [default, strong, parked], allow: ["*"]}
                  small: {tokenSha256: %s, profiles: [default], allow: %s, quotas: {snapshotMiB: 1}}
                  other: {tokenSha256: %s, profiles: [default], allow: %s}
                """.formatted(hash(SMALL), ops, hash(OTHER), ops), c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static String read(RemoteSandbox s, String path) {
        return new String(s.files().read(path), StandardCharsets.UTF_8);
    }

    @Test
    void everyForkStartsWithTheSnapshotsFilesAndNoForkSeesAnothersWrites() throws Exception {
        try (RemoteSandbox original = live.client.create(SandboxSpec.defaults())) {
            original.files().write("/workspace/data.txt", "before".getBytes(StandardCharsets.UTF_8));
            original.exec("sh", "-c", "mkdir -p /workspace/bin && printf '#!/bin/sh\\necho ran\\n' > /workspace/bin/run.sh"
                    + " && chmod 755 /workspace/bin/run.sh && echo scratch > /tmp/scratch.txt"
                    // hostile: a name with a carriage return, a terminal escape sequence, a backslash and a percent sign
                    + " && printf x > \"$(printf '/tmp/a\\r\\033[31mred\\\\b%%c')\""
                    // hostile: links to a file and to a directory outside /workspace, which a snapshot must not read through
                    + " && ln -s /etc/passwd /workspace/passwd && ln -s /etc /workspace/etc-dir");
            SnapshotInfo snap = original.snapshot();
            assertThat(snap.files()).as("the four regular files, nothing through the links").isEqualTo(4);
            assertThat(snap.digest()).startsWith("sha256:");
            assertThat(snap.sandbox()).isEqualTo(original.id());
            assertThat(live.client.snapshots()).extracting(SnapshotInfo::id).contains(snap.id());
            original.files().write("/workspace/after.txt", "after".getBytes(StandardCharsets.UTF_8));
            assertThat(archive(snap.id())).as("names percent-encoded where a terminal would act on them")
                    .containsExactly("tmp/a%0D%1B[31mred%5Cb%25c 644 x", "tmp/scratch.txt 644 scratch\n",
                            "workspace/bin/run.sh 755 #!/bin/sh\necho ran\n", "workspace/data.txt 644 before");

            List<RemoteSandbox> forks = live.client.fork(snap.id(), 3);
            try {
                assertThat(forks).hasSize(3).extracting(RemoteSandbox::id).doesNotHaveDuplicates().doesNotContain(original.id());
                for (RemoteSandbox f : forks) {
                    assertThat(read(f, "/workspace/data.txt")).isEqualTo("before");
                    assertThat(read(f, "/tmp/scratch.txt")).isEqualTo("scratch\n");
                    assertThat(f.exec("/workspace/bin/run.sh").stdout()).as("the mode came back: it runs").isEqualTo("ran\n");
                    assertThat(f.exec("test", "-e", "/workspace/after.txt").exitCode()).as("written after the snapshot").isEqualTo(1);
                    assertThat(f.exec("sh", "-c", "test -e /workspace/passwd || test -e /workspace/etc-dir").exitCode())
                            .as("no link, and nothing read through one").isEqualTo(1);
                }
                forks.getFirst().files().write("/workspace/data.txt", "changed in fork 0".getBytes(StandardCharsets.UTF_8));
                forks.getFirst().files().write("/workspace/only-fork-0.txt", new byte[]{1});
                for (RemoteSandbox other : List.of(forks.get(1), forks.get(2), original)) {
                    assertThat(read(other, "/workspace/data.txt")).isEqualTo("before");
                    assertThat(other.exec("test", "-e", "/workspace/only-fork-0.txt").exitCode()).isEqualTo(1);
                }
            } finally {
                forks.forEach(RemoteSandbox::close);
            }
            assertThat(live.audit(forks.getFirst().id(), AuditRecord.LIFECYCLE)).extracting(AuditRecord::detail)
                    .anySatisfy(d -> assertThat(d).contains("\"event\":\"restored\"", snap.id()));
            assertThat(live.client.deleteSnapshot(snap.id())).isTrue();
            assertThatThrownBy(() -> live.client.fork(snap.id(), 1)).isInstanceOf(NotFoundException.class);
        }
    }

    @Test
    void aSnapshotAlteredOnTheHostIsRefusedAtRestoreAndNoSandboxIsLeft() throws IOException {
        SnapshotInfo snap;
        try (RemoteSandbox original = live.client.create(SandboxSpec.defaults())) {
            original.files().write("/workspace/payload.txt", "genuine".getBytes(StandardCharsets.UTF_8));
            snap = original.snapshot();
        }
        Path blob;
        try (Stream<Path> blobs = Files.list(live.dataDir.resolve("snapshots").resolve("blobs"))) {
            String genuine = HexFormat.of().formatHex(sha256("genuine".getBytes(StandardCharsets.UTF_8)));
            blob = blobs.filter(b -> b.getFileName().toString().equals(genuine)).findFirst().orElseThrow();
        }
        blob.toFile().setWritable(true);
        Files.writeString(blob, "evil!!!");
        int before = live.client.list().size();
        assertThatThrownBy(() -> live.client.fork(snap.id(), 2)).isInstanceOf(ConflictException.class)
                .hasMessageContaining("was altered on the host").hasMessageContaining("payload.txt");
        assertThat(live.client.list()).as("the refused restore's sandboxes are destroyed").hasSize(before);

        Files.writeString(blob, "genuine"); // the content back, the manifest changed instead
        Path manifest = live.dataDir.resolve("snapshots").resolve(snap.id()).resolve("manifest.json");
        Files.writeString(manifest, Files.readString(manifest).replace("payload.txt", "payloaX.txt"));
        assertThatThrownBy(() -> live.client.fork(snap.id(), 1)).isInstanceOf(ConflictException.class)
                .hasMessageContaining("its manifest changed");
        HttpResponse<String> archive = live.raw("GET", "/v1/snapshots/" + snap.id() + "/archive", null);
        assertThat(archive.statusCode()).as("an altered snapshot is not downloaded either").isEqualTo(409);
        live.client.deleteSnapshot(snap.id());
    }

    @Test
    void anotherClientsSnapshotIsNotFoundAndTheQuotaAndTtlHold() throws Exception {
        // client 'small' has 1 MiB of snapshots
        String id = created(live.raw("POST", "/v1/sandboxes", "{}", SMALL));
        try {
            assertThat(live.raw("PUT", "/v1/sandboxes/" + id + "/files?path=/workspace/small.txt", "x", SMALL).statusCode()).isEqualTo(201);
            HttpResponse<String> taken = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"ttlSeconds\": 2}", SMALL);
            assertThat(taken.statusCode()).as(taken.body()).isEqualTo(201);
            String snap = JSON.readTree(taken.body()).path("id").asString();

            assertThat(live.raw("GET", "/v1/snapshots/" + snap, null, OTHER).statusCode()).isEqualTo(404);
            assertThat(live.raw("POST", "/v1/snapshots/" + snap + "/fork", "{}", OTHER).statusCode()).isEqualTo(404);
            assertThat(live.raw("DELETE", "/v1/snapshots/" + snap, null, OTHER).statusCode()).isEqualTo(404);
            assertThat(JSON.readTree(live.raw("GET", "/v1/snapshots", null, OTHER).body()).path("snapshots")).isEmpty();
            assertThat(live.raw("GET", "/v1/snapshots/" + snap, null, SMALL).statusCode()).isEqualTo(200);

            // over the quota: 2 MiB of files
            assertThat(live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                    "{\"command\": [\"sh\", \"-c\", \"head -c 2097152 /dev/zero > /workspace/big\"]}", SMALL).statusCode()).isEqualTo(200);
            HttpResponse<String> over = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{}", SMALL);
            assertThat(over.statusCode()).as(over.body()).isEqualTo(429);
            assertThat(JSON.readTree(over.body()).path("error").path("message").asString()).contains("quotas.snapshotMiB");

            // its TTL of 2 s ends it
            await().atMost(Duration.ofSeconds(20)).until(() -> live.raw("GET", "/v1/snapshots/" + snap, null, SMALL).statusCode() == 404);
            assertThat(live.raw("POST", "/v1/snapshots/" + snap + "/fork", "{}", SMALL).statusCode()).isEqualTo(404);
        } finally {
            assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null, SMALL).statusCode()).isEqualTo(204);
        }
    }

    @Test
    void aRestoredSandboxKeepsTheSnapshotsProfileAndAForkNeedsCreate() {
        try (RemoteSandbox original = live.client.create(SandboxSpec.defaults())) {
            SnapshotInfo snap = original.snapshot();
            assertThat(snap.profile()).isEqualTo("default");
            HttpResponse<String> wrong = live.raw("POST", "/v1/snapshots/" + snap.id() + "/fork", "{\"profile\": \"other\"}");
            assertThat(wrong.statusCode()).as(wrong.body()).isEqualTo(400);
            HttpResponse<String> tooMany = live.raw("POST", "/v1/snapshots/" + snap.id() + "/fork", "{\"count\": 17}");
            assertThat(tooMany.statusCode()).as(tooMany.body()).isEqualTo(400);
            List<RemoteSandbox> one = live.client.fork(snap.id(), 1);
            try {
                SandboxInfo info = one.getFirst().info();
                assertThat(info.running()).isTrue();
            } finally {
                one.forEach(RemoteSandbox::close);
            }
            live.client.deleteSnapshot(snap.id());
        }
    }

    /**
     * Memory state under gVisor: a Python process holding x = 42 only in its memory is running, with
     * x, in a sandbox forked from a memory snapshot, as are the files; the checkpoint image is in the
     * snapshot's digest (altered, the fork is refused); on the container tier a memory snapshot is a
     * 400 naming the tier.
     */
    @Test
    void underGvisorAProcessWithAVariableInMemorySurvivesAMemorySnapshotAndItsFork() throws Exception {
        String id = created(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"strong\"}"));
        String snap;
        try {
            String program = "import os, time\nx = 6 * 7\nwhile True:\n    if os.path.exists('/tmp/ask'):\n"
                    + "        open('/tmp/x', 'w').write(str(x))\n        os.remove('/tmp/ask')\n    time.sleep(0.05)\n";
            assertThat(live.raw("PUT", "/v1/sandboxes/" + id + "/files?path=/workspace/p.py", program).statusCode()).isEqualTo(201);
            HttpResponse<String> started = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                    "{\"command\": [\"sh\", \"-c\", \"python3 /workspace/p.py >/dev/null 2>&1 &\"]}");
            assertThat(started.statusCode()).as(started.body()).isEqualTo(200);
            HttpResponse<String> taken = live.raw("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"memory\": true}");
            assertThat(taken.statusCode()).as(taken.body()).isEqualTo(201);
            JsonNode view = JSON.readTree(taken.body());
            assertThat(view.path("memory").asBoolean()).isTrue();
            assertThat(view.path("bytes").asLong()).as("the checkpoint image counts").isGreaterThan(100_000);
            snap = view.path("id").asString();
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
        // the original is gone, and with it its process: x can only come from the snapshot's memory
        String ask = "touch /tmp/ask; while [ -e /tmp/ask ]; do sleep 0.05; done; cat /tmp/x";
        List<RemoteSandbox> forks = live.client.fork(snap, 1);
        try {
            RemoteSandbox fork = forks.getFirst();
            assertThat(read(fork, "/workspace/p.py")).startsWith("import os");
            assertThat(fork.exec("sh", "-c", ask).stdout()).isEqualTo("42");
        } finally {
            forks.forEach(RemoteSandbox::close);
        }
        JsonNode manifest = JSON.readTree(Files.readString(live.dataDir.resolve("snapshots").resolve(snap).resolve("manifest.json")));
        JsonNode part = null;
        for (JsonNode p : manifest.path("memory")) {
            part = p.path("name").asString().equals("checkpoint.img") ? p : part;
        }
        assertThat(part).as("runsc's image among the parts: %s", manifest.path("memory")).isNotNull();
        Path image = live.dataDir.resolve("snapshots").resolve("blobs").resolve(part.path("sha256").asString());
        image.toFile().setWritable(true);
        try (var out = Files.newOutputStream(image, java.nio.file.StandardOpenOption.APPEND)) {
            out.write(1);
        }
        assertThatThrownBy(() -> live.client.fork(snap, 1)).isInstanceOf(ConflictException.class)
                .hasMessageContaining("was altered on the host").hasMessageContaining("checkpoint part");
        live.client.deleteSnapshot(snap);

        try (RemoteSandbox plain = live.client.create(SandboxSpec.defaults())) {
            assertThatThrownBy(plain::snapshotWithMemory).isInstanceOf(dev.airlock.client.BadRequestException.class)
                    .hasMessageContaining("container tier").hasMessageContaining("processes do not survive");
        }
    }

    /**
     * Pause to disk under gVisor: a Python process counting in memory is saved and stopped, so no
     * process of the sandbox is left on the host while its image is in the data directory; resumed,
     * the same process counts on from where it was; destroyed while paused to disk, its image goes.
     * On the container tier a pause to disk is a 400 naming the tier.
     */
    @Test
    void underGvisorAPauseToDiskStopsEveryProcessAndTheResumeHasThemGoOnWhereTheyWere() throws Exception {
        String id = created(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"strong\"}"));
        Path image = live.dataDir.resolve("snapshots").resolve("paused").resolve(id);
        try {
            startCounter(id);
            String[] before = ask(id).split(" ");
            assertThat(processesNaming(id)).as("runsc's processes of the running sandbox").isNotEmpty();

            long pausing = System.nanoTime();
            HttpResponse<String> paused = live.raw("POST", "/v1/sandboxes/" + id + "/pause", "{\"toDisk\": true}");
            long pausedMs = (System.nanoTime() - pausing) / 1_000_000;
            assertThat(paused.statusCode()).as(paused.body()).isEqualTo(200);
            JsonNode view = JSON.readTree(paused.body());
            assertThat(view.path("state").asString()).isEqualTo("paused");
            assertThat(view.path("pausedToDisk").asBoolean()).isTrue();
            try (var files = Files.list(image)) {
                assertThat(files.toList()).as("runsc's image in the data directory").isNotEmpty();
            }
            assertThat(processesNaming(id)).as("processes of the sandbox paused to disk").isEmpty();
            // asked again: nothing changes, its image is kept
            HttpResponse<String> again = live.raw("POST", "/v1/sandboxes/" + id + "/pause", "{\"toDisk\": true}");
            assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
            try (var files = Files.list(image)) {
                assertThat(files.toList()).as("the image after a second pause to disk").isNotEmpty();
            }
            HttpResponse<String> refused = live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"true\"]}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(409);

            long resuming = System.nanoTime();
            HttpResponse<String> resumed = live.raw("POST", "/v1/sandboxes/" + id + "/resume", null);
            System.out.printf("gVisor pause to disk: %d ms; resume from disk: %d ms%n", pausedMs, (System.nanoTime() - resuming) / 1_000_000);
            assertThat(resumed.statusCode()).as(resumed.body()).isEqualTo(200);
            assertThat(JSON.readTree(resumed.body()).path("state").asString()).isEqualTo("running");
            assertThat(image).as("the image, once restored").doesNotExist();
            String[] after = ask(id).split(" ");
            assertThat(after[0]).as("the same process").isEqualTo(before[0]);
            assertThat(Long.parseLong(after[1])).as("its count, kept in memory only").isGreaterThan(Long.parseLong(before[1]));

            // paused to disk again (through the SDK) and destroyed so: its image goes with it
            assertThat(live.client.get(id).pauseToDisk().paused()).isTrue();
            assertThat(image).exists();
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
        assertThat(image).as("the image of a sandbox destroyed while paused to disk").doesNotExist();

        String plain = created(live.raw("POST", "/v1/sandboxes", "{}"));
        try {
            HttpResponse<String> refused = live.raw("POST", "/v1/sandboxes/" + plain + "/pause", "{\"toDisk\": true}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(400);
            assertThat(refused.body()).contains("container tier").contains("without \\\"toDisk\\\"");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + plain, null);
        }
    }

    /**
     * A profile with {@code onIdle: pauseToDisk}: its sandbox, idle for its idle timeout, is paused to
     * disk, not destroyed, and resumed it has its counting process where it was.
     */
    @Test
    void anIdleSandboxOfAProfileThatSaysSoIsPausedToDiskAndResumesWhereItWas() throws Exception {
        String id = created(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"parked\", \"idleTimeoutSeconds\": 2}"));
        try {
            startCounter(id);
            String[] before = ask(id).split(" ");
            // watched through the listing: a look at the sandbox itself would count as activity
            JsonNode view = null;
            for (int i = 0; i < 300 && (view == null || !view.path("pausedToDisk").asBoolean()); i++) {
                Thread.sleep(100);
                view = null;
                for (JsonNode listed : JSON.readTree(live.raw("GET", "/v1/sandboxes", null).body()).path("sandboxes")) {
                    view = listed.path("id").asString().equals(id) ? listed : view;
                }
                assertThat(view).as("the idle sandbox is kept").isNotNull();
            }
            assertThat(view.path("state").asString()).isEqualTo("paused");
            assertThat(view.path("pausedToDisk").asBoolean()).as(view.toString()).isTrue();
            assertThat(processesNaming(id)).as("processes of the sandbox parked on disk").isEmpty();
            HttpResponse<String> resumed = live.raw("POST", "/v1/sandboxes/" + id + "/resume", null);
            assertThat(resumed.statusCode()).as(resumed.body()).isEqualTo(200);
            String[] after = ask(id).split(" ");
            assertThat(after[0]).as("the same process").isEqualTo(before[0]);
            assertThat(Long.parseLong(after[1])).isGreaterThan(Long.parseLong(before[1]));
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /** Starts, in the background of sandbox {@code id}, a Python process that counts in memory and answers {@link #ask}. */
    private static void startCounter(String id) {
        String program = "import os, time\nn = 0\nwhile True:\n    n += 1\n    if os.path.exists('/tmp/ask'):\n"
                + "        open('/tmp/x', 'w').write('%d %d' % (os.getpid(), n))\n        os.remove('/tmp/ask')\n    time.sleep(0.05)\n";
        assertThat(live.raw("PUT", "/v1/sandboxes/" + id + "/files?path=/workspace/p.py", program).statusCode()).isEqualTo(201);
        HttpResponse<String> started = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                "{\"command\": [\"sh\", \"-c\", \"python3 /workspace/p.py >/dev/null 2>&1 &\"]}");
        assertThat(started.statusCode()).as(started.body()).isEqualTo(200);
    }

    /** What the counting process of {@link #startCounter} answers: its pid and count. */
    private static String ask(String id) throws Exception {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"sh\", \"-c\","
                + " \"touch /tmp/ask; while [ -e /tmp/ask ]; do sleep 0.05; done; cat /tmp/x\"]}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body()).path("stdout").asString();
    }

    /** The host processes whose command line names {@code id} (runsc's sandbox, gofer and container processes do). */
    static List<String> processesNaming(String id) throws IOException {
        List<String> found = new java.util.ArrayList<>();
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(p -> p.getFileName().toString().chars().allMatch(Character::isDigit)).toList()) {
                try {
                    String cmdline = Files.readString(p.resolve("cmdline")).replace('\0', ' ');
                    if (cmdline.contains(id)) {
                        found.add(p.getFileName() + ": " + cmdline);
                    }
                } catch (IOException gone) {
                    // ended meanwhile
                }
            }
        }
        return found;
    }

    /** The snapshot's archive as one line per entry: name, mode (octal) and content. */
    private static List<String> archive(String snapshot) throws IOException, InterruptedException {
        HttpResponse<byte[]> r = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                        java.net.URI.create(live.uri() + "/v1/snapshots/" + snapshot + "/archive"))
                .header("Authorization", "Bearer " + live.token()).build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/x-tar");
        List<String> entries = new java.util.ArrayList<>();
        try (var tar = new org.apache.commons.compress.archivers.tar.TarArchiveInputStream(new java.io.ByteArrayInputStream(r.body()))) {
            for (var e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
                entries.add(e.getName() + " " + Integer.toOctalString(e.getMode() & 0777) + " "
                        + new String(tar.readAllBytes(), StandardCharsets.UTF_8));
            }
        }
        return entries.stream().sorted().toList();
    }

    private static String created(HttpResponse<String> r) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        JsonNode n = JSON.readTree(r.body());
        return n.path("id").asString();
    }

    private static byte[] sha256(byte[] b) {
        try {
            return java.security.MessageDigest.getInstance("SHA-256").digest(b);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
