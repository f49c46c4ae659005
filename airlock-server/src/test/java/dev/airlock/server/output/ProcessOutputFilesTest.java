package dev.airlock.server.output;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/** Background process output on disk: written as produced, gone with its sandbox, and gone at start for dead servers. */
class ProcessOutputFilesTest {

    @TempDir
    Path data;

    @Test
    void outputOfServersNoLongerRunningIsDeletedAtStartAndALiveOnesIsKept() throws Exception {
        Path root = data.resolve("processes");
        Path dead = Files.createDirectories(root.resolve("dead-1").resolve("al-dead-1-a"));
        Files.writeString(dead.resolve("p-1.out"), "left by a crashed server");
        Path alive = Files.createDirectories(root.resolve("other-2").resolve("al-other-2-b"));
        Files.writeString(alive.resolve("p-1.out"), "another server's, still running");

        new ProcessOutputFiles(root, "me-3", Set.of("me-3", "other-2")::contains);

        assertThat(root.resolve("dead-1")).doesNotExist();
        assertThat(alive.resolve("p-1.out")).hasContent("another server's, still running");
    }

    @Test
    void outputIsWrittenAsProducedCountedAndDeletedWithItsSandbox() throws Exception {
        ProcessOutputFiles files = new ProcessOutputFiles(data.resolve("processes"), "me-3", "me-3"::equals);
        SpilledOutput out = files.create("al-me-3-a", "p-1", new AtomicLong(), 1024);
        out.stdout("hello ".getBytes(StandardCharsets.UTF_8));
        out.stdout("world".getBytes(StandardCharsets.UTF_8));
        out.stderr("oops".getBytes(StandardCharsets.UTF_8));
        assertThat(out.stdoutFile()).hasContent("hello world");
        assertThat(out.stdoutBytes()).isEqualTo(11);
        assertThat(new String(SpilledOutput.head(out.stdoutFile(), 5), StandardCharsets.UTF_8)).isEqualTo("hello");
        assertThat(Files.getPosixFilePermissions(out.stderrFile())).hasSize(2);
        out.close();
        out.stdout("after the end".getBytes(StandardCharsets.UTF_8));
        assertThat(out.stdoutBytes()).as("writes after close are dropped").isEqualTo(11);

        files.deleteSandbox("al-me-3-a");
        assertThat(out.stdoutFile().getParent()).doesNotExist();
    }

    @Test
    void processesOfASandboxShareOneBudgetOnDiskAndAnEvictedOneGivesItsShareBack() throws Exception {
        ProcessOutputFiles files = new ProcessOutputFiles(data.resolve("processes"), "me-3", "me-3"::equals);
        AtomicLong stored = new AtomicLong();
        SpilledOutput first = files.create("al-me-3-a", "p-1", stored, 8);
        SpilledOutput second = files.create("al-me-3-a", "p-2", stored, 8);
        first.stdout("hello".getBytes(StandardCharsets.UTF_8));
        second.stdout("world".getBytes(StandardCharsets.UTF_8));
        assertThat(first.dropped()).isFalse();
        assertThat(second.dropped()).as("the budget was spent mid-chunk").isTrue();
        assertThat(second.stdoutFile()).hasContent("wor");
        assertThat(stored).hasValue(8);
        second.stderr("more".getBytes(StandardCharsets.UTF_8));
        assertThat(second.stderrBytes()).isZero();

        files.delete(first);
        assertThat(stored).hasValue(3);
        assertThat(first.stdoutFile()).doesNotExist();
        second.stdout("again".getBytes(StandardCharsets.UTF_8));
        assertThat(second.stdoutFile()).hasContent("woragain");
    }
}
