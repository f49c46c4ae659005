package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent.AgentProcess;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileOperationException;
import dev.airlock.core.SandboxAgent.FileType;
import dev.airlock.core.SandboxAgent.ProcessExit;
import dev.airlock.core.SandboxAgent.Tree;
import dev.airlock.core.SandboxAgent.TreeBounds;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What the host uses to collect a sandbox's outputs, against the real agent on the host: a walk
 * bounded in entries, depth and files kept, that never follows a link at any step, even while
 * the tree is changed under it; reads that refuse a link at any component; and KILL_ALL, after
 * which nothing runs and nothing can start.
 */
@Timeout(120)
class AgentTreeTest {

    private static final Duration AWAIT = Duration.ofSeconds(30);

    @TempDir
    Path dir;
    private RealAgent agent;
    private Path root;
    /** A wide tree outside the walked one: nothing of it may ever be reported or read. */
    private Path outside;

    @BeforeEach
    void startAgent() throws Exception {
        agent = RealAgent.start(dir);
        root = Files.createDirectory(dir.resolve("root"));
        outside = Files.createDirectory(dir.resolve("outside"));
        for (int i = 0; i < 200; i++) {
            Files.writeString(outside.resolve("OUTSIDE-" + i), "OUTSIDE");
        }
        Files.writeString(outside.resolve("inner.txt"), "OUTSIDE");
    }

    @AfterEach
    void stopAgent() throws Exception {
        agent.close();
    }

    private Tree walk(Path top, int entries, int depth, int files) throws Exception {
        return agent.client.walk(top.toString(), new TreeBounds(entries, depth, files));
    }

    private String readNoFollow(Path file) throws Exception {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        agent.client.readFileNoFollow(file.toString(), 1000, sink);
        return sink.toString(StandardCharsets.UTF_8);
    }

    @Test
    void walkReportsLinksAsLinksAndNeverEntersThem() throws Exception {
        Files.createDirectories(root.resolve("a/b"));
        Files.writeString(root.resolve("a/b/file.txt"), "mine");
        Files.createSymbolicLink(root.resolve("to-outside"), outside);
        Files.createSymbolicLink(root.resolve("a/to-usr"), Path.of("/usr"));

        Tree tree = walk(root, 1000, 16, 100);

        assertThat(tree.files()).extracting(FileInfo::path).containsExactly(root + "/a/b/file.txt");
        assertThat(tree.entries()).isEqualTo(5);   // a, a/b, a/b/file.txt, a/to-usr, to-outside
        assertThat(tree.entriesCut()).isFalse();
    }

    @Test
    void walkRefusesARootReachedThroughALinkAtAnyComponent() throws Exception {
        Files.createSymbolicLink(root.resolve("link"), outside);
        Path viaLinkedParent = Files.createSymbolicLink(root.resolve("parent"), dir);

        assertThatThrownBy(() -> walk(root.resolve("link"), 1000, 16, 100)).isInstanceOf(FileOperationException.class);
        assertThatThrownBy(() -> walk(viaLinkedParent.resolve("outside"), 1000, 16, 100)).isInstanceOf(FileOperationException.class);
    }

    @Test
    void walkOfThousandsOfDirectoriesIsCutAtItsEntryBound() throws Exception {
        for (int i = 0; i < 30; i++) {
            for (int j = 0; j < 100; j++) {
                Files.createDirectories(root.resolve("d" + i).resolve("e" + j));
            }
        }

        Tree tree = walk(root, 1000, 16, 100);

        assertThat(tree.entries()).isEqualTo(1000);
        assertThat(tree.entriesCut()).isTrue();
        assertThat(tree.files()).isEmpty();
    }

    @Test
    void walkDoesNotEnterDirectoriesBelowItsDepthBound() throws Exception {
        Path deep = root;
        for (int i = 0; i < 10; i++) {
            deep = Files.createDirectory(deep.resolve("level" + i));
        }
        Files.writeString(deep.resolve("bottom.txt"), "deep");
        Files.writeString(root.resolve("level0/top.txt"), "shallow");

        Tree tree = walk(root, 1000, 4, 100);

        assertThat(tree.files()).extracting(FileInfo::path).containsExactly(root + "/level0/top.txt");
        assertThat(tree.directoriesNotEntered()).isEqualTo(1);
        assertThat(tree.entries()).isEqualTo(5);
    }

    @Test
    void walkKeepsAtMostItsFileBoundAndCountsTheRest() throws Exception {
        for (int i = 0; i < 50; i++) {
            Files.writeString(root.resolve("f" + i), "x");
        }

        Tree tree = walk(root, 1000, 16, 10);

        assertThat(tree.files()).hasSize(10).allSatisfy(f -> assertThat(f.type()).isEqualTo(FileType.FILE));
        assertThat(tree.filesLeftOut()).isEqualTo(40);
    }

    @Test
    void readNoFollowRefusesALinkAtAnyComponent() throws Exception {
        Files.createDirectories(root.resolve("a"));
        Files.writeString(root.resolve("a/file.txt"), "mine");
        Files.createSymbolicLink(root.resolve("dirlink"), root.resolve("a"));
        Files.createSymbolicLink(root.resolve("filelink"), outside.resolve("inner.txt"));

        assertThat(readNoFollow(root.resolve("a/file.txt"))).isEqualTo("mine");
        assertThatThrownBy(() -> readNoFollow(root.resolve("filelink")))
                .isInstanceOfSatisfying(FileOperationException.class, e -> assertThat(e.errno()).isEqualTo("ELOOP"));
        assertThatThrownBy(() -> readNoFollow(root.resolve("dirlink/file.txt")))
                .isInstanceOfSatisfying(FileOperationException.class, e -> assertThat(e.errno()).isIn("ELOOP", "ENOTDIR"));
    }

    /**
     * The attack on a walk: a directory that was listed is swapped for a link to a wide tree, and
     * back, as fast as possible. Every walk and every read must see the real directory, or
     * nothing; never the tree the link points to.
     */
    @Test
    void aDirectorySwappedForALinkDuringWalksAndReadsIsNeverFollowed() throws Exception {
        Path d = Files.createDirectory(root.resolve("d"));
        Files.writeString(d.resolve("inner.txt"), "mine");
        Path parked = root.resolve("d.real");
        Path link = Files.createSymbolicLink(root.resolve("d.link"), outside);
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger swaps = new AtomicInteger();
        Thread swapper = Thread.ofPlatform().start(() -> {
            try {
                while (!stop.get()) {
                    Files.move(d, parked, StandardCopyOption.ATOMIC_MOVE);
                    Files.move(link, d, StandardCopyOption.ATOMIC_MOVE);
                    Files.move(d, link, StandardCopyOption.ATOMIC_MOVE);
                    Files.move(parked, d, StandardCopyOption.ATOMIC_MOVE);
                    swaps.incrementAndGet();
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        try {
            for (int i = 0; i < 300; i++) {
                Tree tree = walk(root, 1000, 16, 1000);
                assertThat(tree.files()).extracting(FileInfo::path).noneMatch(p -> p.contains("OUTSIDE"));
                try {
                    assertThat(readNoFollow(d.resolve("inner.txt"))).isEqualTo("mine");
                } catch (FileOperationException refused) {
                    assertThat(refused.errno()).isIn("ELOOP", "ENOTDIR", "ENOENT");
                }
            }
        } finally {
            stop.set(true);
            swapper.join();
        }
        assertThat(swaps.get()).as("the swapper raced the walks").isGreaterThan(10);
    }

    @Test
    void killAllEndsEveryProcessAndNoProcessStartsAfterIt() throws Exception {
        Output output = new Output();
        AgentProcess shell = agent.client.start(new ExecRequest(List.of("sh", "-c", "sleep 1000 & echo $!; exec sleep 1000"),
                Map.of("PATH", "/usr/bin:/bin"), "/", null, null), output);
        long background = awaitPid(output);
        assertThat(ProcessHandle.of(background).map(ProcessHandle::isAlive)).contains(true);

        agent.client.killAll();

        assertThat(shell.await(AWAIT)).isEqualTo(new ProcessExit(137, 9, null));
        assertThat(ProcessHandle.of(background).map(ProcessHandle::isAlive).orElse(false)).as("the background child").isFalse();
        AgentProcess late = agent.client.start(new ExecRequest(List.of("true"), Map.of("PATH", "/usr/bin:/bin"), "/", null, null),
                OutputListener.NONE);
        assertThat(late.await(AWAIT).startError()).contains("being destroyed");
    }

    private static long awaitPid(Output output) throws InterruptedException {
        for (int i = 0; i < 300; i++) {
            String out = output.stdout().strip();
            if (!out.isEmpty()) {
                return Long.parseLong(out);
            }
            Thread.sleep(10);
        }
        throw new AssertionError("the shell never printed its background child's pid");
    }
}
