package dev.airlock.it;

import dev.airlock.client.BadRequestException;
import dev.airlock.client.ConflictException;
import dev.airlock.client.ExecResult;
import dev.airlock.client.FileInfo;
import dev.airlock.client.FileType;
import dev.airlock.client.Language;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.PayloadTooLargeException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestInputStream;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The files API: streamed transfers, directory operations, and what sandboxed code can do to trick
 * it (symlinks, hard links, {@code ..}, FIFOs): every path is resolved inside the sandbox, so
 * nothing reaches the host.
 */
class ServerFilesTest {

    private static LiveServer live;
    private static RemoteSandbox sandbox;
    private Path hostMarker;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(1));
        sandbox = live.client.create();
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    @AfterEach
    void removeHostMarker() throws IOException {
        if (hostMarker != null) {
            Files.deleteIfExists(hostMarker);
        }
    }

    private static ExecResult ok(ExecResult r) {
        assertThat(r.exitCode()).as("exit code; stdout: %s stderr: %s", r.stdout(), r.stderr()).isZero();
        return r;
    }

    private static String sh(String script) {
        return ok(sandbox.exec("sh", "-c", script)).stdout();
    }

    /** A host file with unique, secret content, in a place sandboxed code might aim a link at. */
    private Path hostMarker() throws IOException {
        hostMarker = Path.of("/var/tmp", "airlock-e2e-marker-" + UUID.randomUUID());
        Files.writeString(hostMarker, "HOST SECRET " + hostMarker.getFileName() + "\n");
        return hostMarker;
    }

    /** Deterministic pseudo-random bytes, {@code size} of them, produced as read: nothing held whole. */
    private static InputStream generated(long size, long seed) {
        return new InputStream() {
            private final SplittableRandom random = new SplittableRandom(seed);
            private long left = size;

            @Override
            public int read() {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (left == 0) {
                    return -1;
                }
                int n = (int) Math.min(len, left);
                for (int i = 0; i < n; i++) {
                    b[off + i] = (byte) random.nextInt(256);
                }
                left -= n;
                return n;
            }
        };
    }

    // --- transfers and directory operations ---

    @Test
    void fiveMegabytesRoundTripStreamedIntact() throws Exception {
        long size = 5L * 1024 * 1024;
        MessageDigest sent = MessageDigest.getInstance("SHA-256");
        try (InputStream in = new DigestInputStream(generated(size, 42), sent)) {
            FileInfo info = sandbox.files().write("/workspace/big.bin", in);
            assertThat(info.size()).isEqualTo(size);
            assertThat(info.type()).isEqualTo(FileType.FILE);
        }
        MessageDigest received = MessageDigest.getInstance("SHA-256");
        long copied;
        try (OutputStream out = new DigestOutputStream(OutputStream.nullOutputStream(), received)) {
            copied = sandbox.files().download("/workspace/big.bin", out);
        }
        assertThat(copied).isEqualTo(size);
        assertThat(received.digest()).isEqualTo(sent.digest());
        // The sandbox sees the same bytes.
        String inSandbox = sh("sha256sum /workspace/big.bin | cut -d' ' -f1").trim();
        MessageDigest again = MessageDigest.getInstance("SHA-256");
        try (InputStream in = new DigestInputStream(generated(size, 42), again)) {
            in.transferTo(OutputStream.nullOutputStream());
        }
        assertThat(inSandbox).isEqualTo(java.util.HexFormat.of().formatHex(again.digest()));
        sandbox.files().remove("/workspace/big.bin");
    }

    @Test
    void fileWrittenByCodeIsReadableAndFileWrittenByApiIsVisibleToCode() {
        ok(sandbox.run(Language.PYTHON, "open('/workspace/from-code.txt', 'w').write('made inside')"));
        assertThat(sandbox.files().read("/workspace/from-code.txt")).asString().isEqualTo("made inside");
        sandbox.files().write("/workspace/nested/new/from-api.txt", "sent in".getBytes());
        assertThat(sh("cat /workspace/nested/new/from-api.txt")).isEqualTo("sent in");
    }

    @Test
    void directoryOperationsListStatMkdirRenameRemove() {
        String root = "/workspace/ops-" + System.nanoTime();
        FileInfo dir = sandbox.files().mkdir(root + "/a/b/c");
        assertThat(dir.isDirectory()).isTrue();
        assertThat(dir.path()).isEqualTo(root + "/a/b/c");
        sandbox.files().write(root + "/a/one.txt", "1".getBytes());
        sandbox.files().write(root + "/a/b/two.txt", "22".getBytes());

        List<FileInfo> entries = sandbox.files().list(root + "/a");
        assertThat(entries).extracting(FileInfo::name).containsExactlyInAnyOrder("b", "one.txt");
        assertThat(entries).filteredOn(f -> f.name().equals("one.txt")).singleElement()
                .satisfies(f -> {
                    assertThat(f.type()).isEqualTo(FileType.FILE);
                    assertThat(f.size()).isEqualTo(1);
                    assertThat(f.mode()).isEqualTo(0644);
                    assertThat(f.modifiedAt()).isNotNull();
                });

        FileInfo stat = sandbox.files().stat(root + "/a/b/two.txt");
        assertThat(stat.size()).isEqualTo(2);
        assertThat(stat.isFile()).isTrue();

        FileInfo renamed = sandbox.files().rename(root + "/a/b", root + "/moved");
        assertThat(renamed.path()).isEqualTo(root + "/moved");
        assertThat(renamed.isDirectory()).isTrue();
        assertThat(sandbox.files().read(root + "/moved/two.txt")).asString().isEqualTo("22");
        assertThat(sandbox.files().exists(root + "/a/b")).isFalse();

        sandbox.files().remove(root + "/a/one.txt");
        assertThat(sandbox.files().exists(root + "/a/one.txt")).isFalse();
        assertThatThrownBy(() -> sandbox.files().remove(root)).isInstanceOf(ConflictException.class);
        sandbox.files().remove(root, true);
        assertThat(sandbox.files().exists(root)).isFalse();
        assertThat(sh("ls -a /workspace | grep -c ops- || true").trim()).isEqualTo("0");
    }

    @Test
    void statDoesNotFollowAFinalSymlink() {
        ok(sandbox.exec("ln", "-sfn", "/etc/hostname", "/workspace/stat-link"));
        FileInfo link = sandbox.files().stat("/workspace/stat-link");
        assertThat(link.type()).isEqualTo(FileType.SYMLINK);
        assertThat(link.linkTarget()).isEqualTo("/etc/hostname");
    }

    // --- hostile: what sandboxed code made ---

    @Test
    void symlinkToAHostFileReadsNothingOfTheHost() throws Exception {
        Path marker = hostMarker();
        String secret = Files.readString(marker);
        ok(sandbox.exec("ln", "-sfn", marker.toString(), "/workspace/l"));
        assertThat(sandbox.files().stat("/workspace/l").linkTarget()).isEqualTo(marker.toString());

        Throwable read = catchThrowable(() -> sandbox.files().read("/workspace/l"));
        assertThat(read).as("the link's target does not exist inside the sandbox").isInstanceOf(NotFoundException.class);
        assertThat(read.getMessage()).doesNotContain("HOST SECRET");
        assertThatThrownBy(() -> sandbox.files().read(marker.toString())).isInstanceOf(NotFoundException.class);
        // Writing through the link does not create the host file either.
        assertThatThrownBy(() -> sandbox.files().write("/workspace/l", "overwrite".getBytes())).isInstanceOf(BadRequestException.class);
        assertThat(Files.readString(marker)).isEqualTo(secret);
    }

    @Test
    void symlinkedParentDirectoryToTheHostReachesNothingOfTheHost() throws Exception {
        Path marker = hostMarker();
        ok(sandbox.exec("ln", "-sfn", "/var/tmp", "/workspace/vartmp"));
        assertThatThrownBy(() -> sandbox.files().read("/workspace/vartmp/" + marker.getFileName()))
                .isInstanceOf(NotFoundException.class);
        assertThatThrownBy(() -> sandbox.files().list("/workspace/vartmp")).isInstanceOf(NotFoundException.class);
    }

    @Test
    void writingThroughASymlinkIsRefusedAndItsTargetUnchanged() {
        String before = sh("cat /etc/hostname");
        ok(sandbox.exec("ln", "-sfn", "/etc/hostname", "/workspace/h"));
        assertThatThrownBy(() -> sandbox.files().write("/workspace/h", "pwned\n".getBytes()))
                .isInstanceOf(BadRequestException.class);
        assertThat(sh("cat /etc/hostname")).isEqualTo(before);
        assertThat(sandbox.files().read("/etc/hostname")).asString().isEqualTo(before);
        // A symlinked parent is resolved inside the sandbox, where /etc is read-only.
        ok(sandbox.exec("ln", "-sfn", "/etc", "/workspace/etc-link"));
        assertThatThrownBy(() -> sandbox.files().write("/workspace/etc-link/hostname", "pwned\n".getBytes()))
                .isInstanceOf(BadRequestException.class);
        assertThat(sh("cat /etc/hostname")).isEqualTo(before);
    }

    @Test
    void dotDotCannotClimbOutOfTheSandbox() throws Exception {
        assertThat(Path.of("/etc/shadow")).as("the host has a shadow file to protect").exists();
        assertThatThrownBy(() -> sandbox.files().read("/workspace/../../../etc/shadow")).isInstanceOf(NotFoundException.class);
        assertThatThrownBy(() -> sandbox.files().read("/../../../../etc/shadow")).isInstanceOf(NotFoundException.class);

        String passwd = new String(sandbox.files().read("/workspace/../etc/passwd"), StandardCharsets.UTF_8);
        assertThat(passwd).as("the sandbox's own passwd").isEqualTo(sh("cat /etc/passwd")).contains("root:");
        List<String> hostAccounts = Files.readAllLines(Path.of("/etc/passwd")).stream()
                .map(l -> l.split(":")[0])
                .filter(n -> !n.isBlank() && !n.equals("root") && !n.equals("nobody"))
                .toList();
        assertThat(hostAccounts).as("host accounts to look for").isNotEmpty();
        for (String account : hostAccounts) {
            assertThat(passwd).as("host account %s", account).doesNotContain("\n" + account + ":").doesNotStartWith(account + ":");
        }
    }

    @Test
    void hardLinkToAHostFileCannotBeMadeFromInside() throws Exception {
        Path marker = hostMarker();
        ExecResult r = sandbox.run(Language.PYTHON, """
                import os
                for src, dst in (("%s", "/workspace/hl-host"), ("/etc/passwd", "/workspace/hl-etc"), ("/usr/bin/env", "/workspace/hl-usr")):
                    try:
                        os.link(src, dst)
                        print(dst, "linked")
                    except OSError as e:
                        print(dst, type(e).__name__)
                """.formatted(marker));
        assertThat(r.stdout()).doesNotContain("linked");
        assertThat(r.stdout()).contains("/workspace/hl-host FileNotFoundError");
        for (String p : List.of("/workspace/hl-host", "/workspace/hl-etc", "/workspace/hl-usr")) {
            assertThatThrownBy(() -> sandbox.files().read(p)).isInstanceOf(NotFoundException.class);
        }
    }

    @Test
    void fifoIsRefusedAtOnceInsteadOfHanging() throws Exception {
        ok(sandbox.exec("sh", "-c", "rm -f /workspace/fifo; mkfifo /workspace/fifo"));
        assertThat(sandbox.files().stat("/workspace/fifo").type()).isEqualTo(FileType.OTHER);
        // A guard against a hang, not a measure of speed: a blocked open would never answer.
        CompletableFuture<Throwable> read = CompletableFuture.supplyAsync(() -> catchThrowable(() -> sandbox.files().read("/workspace/fifo")));
        assertThat(read.get(30, TimeUnit.SECONDS)).isInstanceOf(BadRequestException.class);
        CompletableFuture<Throwable> write = CompletableFuture.supplyAsync(() -> catchThrowable(() -> sandbox.files().write("/workspace/fifo", "x".getBytes())));
        assertThat(write.get(30, TimeUnit.SECONDS)).isInstanceOf(BadRequestException.class);
        // The sandbox still serves files afterwards.
        sandbox.files().write("/workspace/after-fifo", "fine".getBytes());
        assertThat(sandbox.files().read("/workspace/after-fifo")).asString().isEqualTo("fine");
    }

    @Test
    void uploadOverTheFileSizeLimitIsTooLarge() {
        try (RemoteSandbox small = live.client.create(SandboxSpec.builder().fileSize("1m").build())) {
            small.files().write("/workspace/fits.bin", generated(1024 * 1024, 1));
            assertThatThrownBy(() -> small.files().write("/workspace/too-big.bin", generated(2 * 1024 * 1024, 2)))
                    .isInstanceOf(PayloadTooLargeException.class)
                    .hasMessageContaining("1m");
            assertThat(small.files().exists("/workspace/too-big.bin")).as("no partial file is left").isFalse();
            // Still usable afterwards.
            assertThat(small.files().stat("/workspace/fits.bin").size()).isEqualTo(1024 * 1024);
        }
    }

    @Test
    void relativePathIsRefused() throws Exception {
        // The SDK refuses it before sending ...
        assertThatThrownBy(() -> sandbox.files().read("workspace/x")).isInstanceOf(IllegalArgumentException.class);
        // ... and the server refuses it on its own.
        for (String method : List.of("GET", "PUT", "DELETE")) {
            HttpResponse<String> r = live.raw(method, "/v1/sandboxes/" + sandbox.id() + "/files?path="
                    + URLEncoder.encode("workspace/rel.txt", StandardCharsets.UTF_8), method.equals("PUT") ? "x" : null);
            assertThat(r.statusCode()).as(method).isEqualTo(400);
            JsonNode error = JsonMapper.builder().build().readTree(r.body()).get("error");
            assertThat(error.get("code").asString()).isEqualTo("invalid_argument");
            assertThat(error.get("message").asString()).contains("absolute");
        }
        HttpResponse<String> stat = live.raw("GET", "/v1/sandboxes/" + sandbox.id() + "/files/stat?path=etc/passwd", null);
        assertThat(stat.statusCode()).isEqualTo(400);
        HttpResponse<String> missing = live.raw("GET", "/v1/sandboxes/" + sandbox.id() + "/files/stat", null);
        assertThat(missing.statusCode()).isEqualTo(400);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"/usr/evil", "/usr/bin/python3", "/run/airlock/evil", "/run/airlock/agent.sock", "/etc/passwd", "/.airlock/airlock-agent"})
    void writingIntoTheImageOrTheAgentsPlacesIsRefused(String path) {
        String before = sh("cat " + path + " 2>/dev/null | sha256sum");
        assertThatThrownBy(() -> sandbox.files().write(path, "overwritten".getBytes())).isInstanceOf(BadRequestException.class);
        assertThat(sh("cat " + path + " 2>/dev/null | sha256sum")).isEqualTo(before);
    }

    @Test
    void directoryOperationsInReadOnlyPlacesAreRefused() {
        assertThatThrownBy(() -> sandbox.files().mkdir("/usr/evil-dir")).isInstanceOf(BadRequestException.class);
        assertThatThrownBy(() -> sandbox.files().mkdir("/run/airlock/evil-dir")).isInstanceOf(BadRequestException.class);
        assertThatThrownBy(() -> sandbox.files().remove("/usr/bin/env")).isInstanceOf(BadRequestException.class);
        assertThatThrownBy(() -> sandbox.files().rename("/usr/bin/env", "/workspace/env")).isInstanceOf(BadRequestException.class);
        assertThat(sandbox.files().stat("/usr/bin/env").isFile()).isTrue();
    }
}
