package dev.airlock.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code airlock leaks} lists the snapshot trees a server left in its data directory, and nothing when there are none. */
class LeaksCommandTest {

    @Test
    void aSnapshotTreeLeftInTheDataDirectoryIsALeak(@TempDir Path data) throws IOException {
        Path trees = data.resolve("snapshots").resolve("trees");
        assertThat(LeaksCommand.snapshotTrees(trees)).as("no trees directory at all").isEmpty();
        Files.createDirectories(trees);
        assertThat(LeaksCommand.snapshotTrees(trees)).isEmpty();
        Path left = Files.createDirectory(trees.resolve("ab".repeat(32)));
        assertThat(LeaksCommand.snapshotTrees(trees)).containsExactly("snapshot tree: " + left);
    }

    /**
     * A state directory too long for a microVM's socket paths is fine when no microVM runs there:
     * the check looks at what exists, and never builds the microVM driver's settings.
     */
    @Test
    void aLongStateDirectoryIsCheckedNotRefused(@TempDir Path dir) throws Exception {
        Path state = Files.createDirectories(dir.resolve("a-state-directory-longer-than-the-microvm-sockets-allow"));
        CliProcess cli = CliProcess.run("leaks", "--state-dir", state.toString(), "--data-dir", dir.resolve("data").toString());
        assertThat(cli.stderr()).isEmpty();
        assertThat(cli.exitCode()).as(cli.stdout()).isIn(0, 1);
        assertThat(cli.stdout()).doesNotContain(state.toString());
    }
}
