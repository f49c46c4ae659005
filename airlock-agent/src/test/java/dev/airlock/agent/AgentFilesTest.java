package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent.AgentProcess;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileOperationException;
import dev.airlock.core.SandboxAgent.FileTooLargeException;
import dev.airlock.core.SandboxAgent.FileType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

/** The file operations against the real agent binary, run on the host in a temporary directory. */
@Timeout(120)
class AgentFilesTest {

    @TempDir
    Path dir;
    private RealAgent agent;
    /** Where the tests make files: the agent's own binary and log stay out of the listings. */
    private Path root;

    @BeforeEach
    void startAgent() throws Exception {
        agent = RealAgent.start(dir);
        root = Files.createDirectory(dir.resolve("root"));
    }

    @AfterEach
    void stopAgent() throws Exception {
        agent.close();
    }

    private static byte[] random(int size) {
        byte[] bytes = new byte[size];
        new Random(size).nextBytes(bytes);
        return bytes;
    }

    private byte[] read(Path file, long maxBytes) throws Exception {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        agent.client.readFile(file.toString(), maxBytes, sink);
        return sink.toByteArray();
    }

    private static String permissions(Path path) throws Exception {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
    }

    /** Asserts the failure is a FileOperationException with {@code errno} that names {@code path}. */
    private static void assertFails(ThrowingCall call, String errno, Path path) {
        assertThatThrownBy(call::run)
                .isInstanceOfSatisfying(FileOperationException.class, e -> assertThat(e.errno()).isEqualTo(errno))
                .hasMessageContaining(path.toString());
    }

    interface ThrowingCall {
        void run() throws Exception;
    }

    // ------------------------------------------------------------ write and read

    @Test
    void streamsFiveMebibytesInAndOut() throws Exception {
        byte[] content = random(5 * 1024 * 1024 + 123);
        Path file = root.resolve("new/dirs/big.bin");

        long written = agent.client.writeFile(file.toString(), new ByteArrayInputStream(content), content.length, 0640);

        assertThat(written).isEqualTo(content.length);
        assertThat(Files.readAllBytes(file)).isEqualTo(content);
        assertThat(permissions(file)).isEqualTo("rw-r-----");
        assertThat(read(file, content.length)).isEqualTo(content);
    }

    @Test
    void aMultiChunkWriteEndsWithTheRequestedReadOnlyMode() throws Exception {
        byte[] content = random(2 * Frame.WRITE_CHUNK);   // an exact multiple: the last frame is empty
        Path file = root.resolve("readonly.bin");

        agent.client.writeFile(file.toString(), new ByteArrayInputStream(content), content.length, 0444);

        assertThat(Files.readAllBytes(file)).isEqualTo(content);
        assertThat(permissions(file)).isEqualTo("r--r--r--");
    }

    @Test
    void writesAndReadsAnEmptyFile() throws Exception {
        Path file = root.resolve("empty");

        assertThat(agent.client.writeFile(file.toString(), InputStream.nullInputStream(), 0, 0600)).isZero();

        assertThat(file).isEmptyFile();
        assertThat(read(file, 0)).isEmpty();
    }

    @Test
    void aStreamOverTheLimitIsReadOnlyOnePastItAndLeavesNoFile() throws Exception {
        Path file = root.resolve("too-big.bin");
        AtomicLong consumed = new AtomicLong();
        InputStream endless = new InputStream() {
            @Override
            public int read() {
                consumed.incrementAndGet();
                return 'x';
            }

            @Override
            public int read(byte[] b, int off, int len) {
                consumed.addAndGet(len);
                Arrays.fill(b, off, off + len, (byte) 'x');
                return len;
            }
        };
        long limit = 3 * Frame.WRITE_CHUNK + 10;

        assertThatThrownBy(() -> agent.client.writeFile(file.toString(), endless, limit, 0644))
                .isInstanceOf(FileTooLargeException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("limit of " + limit + " bytes");

        assertThat(consumed.get()).isEqualTo(limit + 1);
        assertThat(file).doesNotExist();
        assertThat(agent.client.isOpen()).isTrue();
    }

    @Test
    void aStreamOfExactlyTheLimitIsWritten() throws Exception {
        byte[] content = random(Frame.WRITE_CHUNK + 1);
        Path file = root.resolve("exact.bin");

        agent.client.writeFile(file.toString(), new ByteArrayInputStream(content), content.length, 0644);

        assertThat(Files.readAllBytes(file)).isEqualTo(content);
    }

    @Test
    void readingAFileOverTheLimitFails() throws Exception {
        Path file = Files.write(root.resolve("hundred"), random(100));

        assertThat(read(file, 100)).hasSize(100);
        assertThatThrownBy(() -> read(file, 99))
                .isInstanceOf(FileTooLargeException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("100 bytes, over the limit of 99");
        assertThat(agent.client.isOpen()).isTrue();
    }

    @Test
    void readsFollowSymlinks() throws Exception {
        Path target = Files.writeString(root.resolve("target.txt"), "through the link");
        Path link = Files.createSymbolicLink(root.resolve("link"), target);

        assertThat(new String(read(link, 1000), StandardCharsets.UTF_8)).isEqualTo("through the link");
    }

    @Test
    void refusesToWriteThroughASymlinkInTheLastComponent() throws Exception {
        Path target = Files.writeString(root.resolve("target.txt"), "original");
        Path link = Files.createSymbolicLink(root.resolve("link"), target);

        assertThatThrownBy(() -> agent.client.writeFile(link.toString(), new ByteArrayInputStream(random(3 * Frame.WRITE_CHUNK)),
                Long.MAX_VALUE, 0644))
                .isInstanceOfSatisfying(FileOperationException.class, e -> assertThat(e.errno()).isEqualTo("ELOOP"))
                .hasMessageContaining(link.toString())
                .hasMessageContaining("symbolic link");

        assertThat(target).hasContent("original");
        assertThat(link).isSymbolicLink();   // not removed as a "partial file" either
    }

    @Test
    void refusesToReadAFifoWithoutHanging() throws Exception {
        Path fifo = root.resolve("fifo");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();

        long start = System.nanoTime();
        assertFails(() -> read(fifo, 1000), "EINVAL", fifo);

        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
        assertThatThrownBy(() -> read(fifo, 1000)).hasMessageContaining("not a regular file");
    }

    @Test
    void refusesToReadADevice() {
        assertFails(() -> read(Path.of("/dev/zero"), Long.MAX_VALUE), "EINVAL", Path.of("/dev/zero"));
    }

    @Test
    void refusesToReadADirectoryOrAMissingFile() {
        assertFails(() -> read(root, 1000), "EISDIR", root);
        assertFails(() -> read(root.resolve("missing"), 1000), "ENOENT", root.resolve("missing"));
    }

    @Test
    void aProcessKeepsStreamingWhileABigFileIsRead() throws Exception {
        long size = 256L * 1024 * 1024;
        Path file = root.resolve("sparse.bin");
        try (RandomAccessFile sparse = new RandomAccessFile(file.toFile(), "rw")) {
            sparse.setLength(size);   // sparse: reads are fast and take no disk
        }
        AtomicLong delivered = new AtomicLong();
        CompletableFuture<Long> deliveredWhenEchoed = new CompletableFuture<>();
        AgentProcess cat = agent.client.start(new ExecRequest(List.of("cat"), Map.of("PATH", "/usr/bin:/bin"), "/", null, null),
                new OutputListener() {
                    @Override
                    public void stdout(byte[] chunk) {
                        deliveredWhenEchoed.complete(delivered.get());
                    }
                });
        CountDownLatch firstChunk = new CountDownLatch(1);
        OutputStream countingSink = new OutputStream() {
            @Override
            public void write(int b) {
                delivered.incrementAndGet();
            }

            @Override
            public void write(byte[] b, int off, int len) {
                delivered.addAndGet(len);
                firstChunk.countDown();
            }
        };
        CompletableFuture<Void> reading = CompletableFuture.runAsync(() -> {
            try {
                agent.client.readFile(file.toString(), size, countingSink);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });

        assertThat(firstChunk.await(30, TimeUnit.SECONDS)).isTrue();
        cat.writeStdin("ping\n".getBytes(StandardCharsets.UTF_8));

        // Had the agent sent the whole file first, the echo would come after (nearly) all of it.
        long deliveredAtEcho = deliveredWhenEchoed.get(30, TimeUnit.SECONDS);
        assertThat(deliveredAtEcho).isLessThan(size / 2);
        reading.get(60, TimeUnit.SECONDS);
        assertThat(delivered.get()).isEqualTo(size);
        cat.closeStdin();
        assertThat(cat.await(Duration.ofSeconds(30)).exitCode()).isZero();
    }

    @Test
    void aSinkThatFailsEndsOnlyItsOwnRead() throws Exception {
        Path file = Files.write(root.resolve("big.bin"), random(8 * 1024 * 1024));
        OutputStream failing = new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException("the caller's client went away");
            }
        };

        assertThatThrownBy(() -> agent.client.readFile(file.toString(), Long.MAX_VALUE, failing))
                .isInstanceOf(IOException.class)
                .hasMessage("the caller's client went away");

        // The rest of the file is discarded as it arrives; the connection carries on.
        assertThat(read(file, Long.MAX_VALUE)).hasSize(8 * 1024 * 1024);
        assertThat(agent.client.isOpen()).isTrue();
    }

    // ------------------------------------------------------------ stat and list

    @Test
    void statDescribesFilesDirectoriesAndSymlinksWithoutFollowingThem() throws Exception {
        Path file = Files.write(root.resolve("file.txt"), random(1234));
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r-----"));
        Files.setLastModifiedTime(file, FileTime.fromMillis(1_700_000_000_123L));
        Path link = Files.createSymbolicLink(root.resolve("link"), Path.of("file.txt"));

        assertThat(agent.client.stat(file.toString()))
                .isEqualTo(new FileInfo(file.toString(), FileType.FILE, 1234, 0640, 1_700_000_000_123L, null));
        assertThat(agent.client.stat(link.toString()))
                .extracting(FileInfo::path, FileInfo::type, FileInfo::size, FileInfo::linkTarget)
                .containsExactly(link.toString(), FileType.SYMLINK, 8L, "file.txt");
        assertThat(agent.client.stat(root.toString()).type()).isEqualTo(FileType.DIRECTORY);
        assertFails(() -> agent.client.stat(root.resolve("missing").toString()), "ENOENT", root.resolve("missing"));
    }

    @Test
    void listDescribesEveryEntrySortedByName() throws Exception {
        Path file = Files.write(root.resolve("b.txt"), random(10));
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwx------"));
        Path sub = Files.createDirectory(root.resolve("a-dir"));
        Files.createSymbolicLink(root.resolve("c-link"), Path.of("/nowhere/at/all"));
        assertThat(new ProcessBuilder("mkfifo", root.resolve("d-fifo").toString()).start().waitFor()).isZero();
        Files.writeString(sub.resolve("not-listed"), "nested entries are not listed");

        List<FileInfo> entries = agent.client.list(root.toString());

        assertThat(entries).extracting(FileInfo::path, FileInfo::type, FileInfo::linkTarget).containsExactly(
                tuple(root + "/a-dir", FileType.DIRECTORY, null),
                tuple(root + "/b.txt", FileType.FILE, null),
                tuple(root + "/c-link", FileType.SYMLINK, "/nowhere/at/all"),
                tuple(root + "/d-fifo", FileType.OTHER, null));
        assertThat(entries.get(1).size()).isEqualTo(10);
        assertThat(entries.get(1).mode()).isEqualTo(0700);
        assertThat(entries.get(1).modifiedMillis()).isEqualTo(Files.getLastModifiedTime(file).toMillis());
        assertThat(agent.client.list(sub + "/")).extracting(FileInfo::path).containsExactly(sub + "/not-listed");
    }

    @Test
    void listFailsForAFileAMissingDirectoryAndAHugeDirectory() throws Exception {
        Path file = Files.writeString(root.resolve("file"), "x");
        assertFails(() -> agent.client.list(file.toString()), "ENOTDIR", file);
        assertFails(() -> agent.client.list(root.resolve("missing").toString()), "ENOENT", root.resolve("missing"));

        Path huge = Files.createDirectory(root.resolve("huge"));
        for (int i = 0; i <= Frame.MAX_LIST; i++) {
            Files.createFile(huge.resolve("f" + i));
        }
        assertThatThrownBy(() -> agent.client.list(huge.toString()))
                .isInstanceOfSatisfying(FileOperationException.class, e -> assertThat(e.errno()).isEqualTo("E2BIG"))
                .hasMessageContaining("more than 10000 entries");
        Files.delete(huge.resolve("f0"));
        assertThat(agent.client.list(huge.toString())).hasSize(Frame.MAX_LIST);
    }

    // ------------------------------------------------------------ mkdir, remove, rename

    @Test
    void mkdirWithoutParents() throws Exception {
        Path made = root.resolve("made");

        agent.client.mkdir(made.toString(), false);

        assertThat(made).isDirectory();
        assertFails(() -> agent.client.mkdir(made.toString(), false), "EEXIST", made);
        assertFails(() -> agent.client.mkdir(root.resolve("x/y").toString(), false), "ENOENT", root.resolve("x/y"));
    }

    @Test
    void mkdirWithParents() throws Exception {
        Path deep = root.resolve("x/y/z");

        agent.client.mkdir(deep.toString(), true);
        agent.client.mkdir(deep.toString(), true);   // existing: fine

        assertThat(deep).isDirectory();
        Path file = Files.writeString(root.resolve("file"), "x");
        assertFails(() -> agent.client.mkdir(file.toString(), true), "EEXIST", file);
        assertFails(() -> agent.client.mkdir(file.resolve("below").toString(), true), "ENOTDIR", file.resolve("below"));
    }

    @Test
    void mkdirDoesNotAcceptOrFollowASymlink() throws Exception {
        Path elsewhere = Files.createDirectory(root.resolve("elsewhere"));
        Path link = Files.createSymbolicLink(root.resolve("link"), elsewhere.resolve("new"));

        assertFails(() -> agent.client.mkdir(link.toString(), true), "EEXIST", link);

        assertThat(elsewhere.resolve("new")).doesNotExist();
    }

    @Test
    void removesAFileASymlinkAndAnEmptyDirectory() throws Exception {
        Path file = Files.writeString(root.resolve("file"), "x");
        Path target = Files.createDirectory(root.resolve("target"));
        Path link = Files.createSymbolicLink(root.resolve("link"), target);
        Path empty = Files.createDirectory(root.resolve("empty"));

        agent.client.remove(file.toString(), false);
        agent.client.remove(link.toString(), false);
        agent.client.remove(empty + "/", false);

        assertThat(file).doesNotExist();
        assertThat(link).doesNotExist();
        assertThat(target).isDirectory();
        assertThat(empty).doesNotExist();
        assertFails(() -> agent.client.remove(file.toString(), false), "ENOENT", file);
    }

    @Test
    void aNonEmptyDirectoryNeedsRecursive() throws Exception {
        Path full = Files.createDirectory(root.resolve("full"));
        Files.writeString(full.resolve("inside"), "x");

        assertFails(() -> agent.client.remove(full.toString(), false), "ENOTEMPTY", full);

        assertThat(full.resolve("inside")).exists();
    }

    @Test
    void removesATreeRecursivelyWithoutFollowingSymlinksOutOfIt() throws Exception {
        Path outside = Files.createDirectory(root.resolve("outside"));
        Path precious = Files.writeString(outside.resolve("precious"), "keep me");
        Files.createDirectory(outside.resolve("sub"));
        Path tree = Files.createDirectories(root.resolve("tree/a/b/c"));
        Files.writeString(tree.resolve("leaf"), "x");
        Files.writeString(root.resolve("tree/a/file"), "y");
        Files.createSymbolicLink(root.resolve("tree/a/b/to-outside"), outside);
        Files.createSymbolicLink(root.resolve("tree/to-precious"), precious);

        agent.client.remove(root.resolve("tree").toString(), true);

        assertThat(root.resolve("tree")).doesNotExist();
        assertThat(precious).hasContent("keep me");
        assertThat(outside.resolve("sub")).isDirectory();
    }

    @Test
    void aRecursiveRemoveOfASymlinkRemovesOnlyTheLink() throws Exception {
        Path outside = Files.createDirectory(root.resolve("outside"));
        Files.writeString(outside.resolve("precious"), "keep me");
        Path link = Files.createSymbolicLink(root.resolve("link"), outside);

        agent.client.remove(link.toString(), true);

        assertThat(link).doesNotExist();
        assertThat(outside.resolve("precious")).hasContent("keep me");
    }

    @Test
    void refusesToRemoveTheRootOrDotDot() throws Exception {
        Path tree = Files.createDirectories(root.resolve("tree/sub")).getParent();

        assertFails(() -> agent.client.remove("/", true), "EINVAL", Path.of("/"));
        assertFails(() -> agent.client.remove(tree + "/sub/..", true), "EINVAL", tree);

        assertThat(tree.resolve("sub")).isDirectory();
    }

    @Test
    void renamesAndReplacesAFile() throws Exception {
        Path from = Files.writeString(root.resolve("from"), "new content");
        Path to = Files.writeString(root.resolve("to"), "old content");

        agent.client.rename(from.toString(), to.toString());

        assertThat(from).doesNotExist();
        assertThat(to).hasContent("new content");
        assertFails(() -> agent.client.rename(from.toString(), to.toString()), "ENOENT", from);
    }

    @Test
    void renameMovesASymlinkItselfAndReplacesALinkNotItsTarget() throws Exception {
        Path target = Files.writeString(root.resolve("target"), "untouched");
        Path link = Files.createSymbolicLink(root.resolve("link"), target);
        Path from = Files.writeString(root.resolve("from"), "moved");

        agent.client.rename(from.toString(), link.toString());

        assertThat(link).isRegularFile().hasContent("moved");
        assertThat(target).hasContent("untouched");
    }

    @Test
    void relativeAndOverlongPathsAreRefusedBeforeAnythingIsSent() {
        assertThatThrownBy(() -> agent.client.stat("relative/path")).hasMessageContaining("must be absolute");
        assertThatThrownBy(() -> agent.client.mkdir("/" + "a".repeat(5000), true)).hasMessageContaining("longer than 4095 bytes");
        assertThatThrownBy(() -> agent.client.remove("/a\0b", true)).hasMessageContaining("NUL byte");
        assertThatThrownBy(() -> agent.client.readFile("/x", -1, OutputStream.nullOutputStream())).hasMessageContaining("negative");
        assertThat(agent.client.isOpen()).isTrue();
    }
}
