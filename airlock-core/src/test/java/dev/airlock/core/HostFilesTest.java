package dev.airlock.core;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** Deleting a sandbox's host directories: a link the sandbox planted there must never lead the host outside. */
class HostFilesTest {

    @TempDir
    Path dir;

    @Test
    void deleteTreeNeverFollowsALinkOutOfTheTree() throws IOException {
        Path precious = Files.createDirectories(dir.resolve("host/etc"));
        Files.writeString(precious.resolve("passwd"), "root:x:0:0");
        Path tree = Files.createDirectories(dir.resolve("sandbox/workspace/deep"));
        Files.createSymbolicLink(tree.resolve("escape"), precious);
        Files.createSymbolicLink(tree.resolve("file-escape"), precious.resolve("passwd"));
        Files.createSymbolicLink(dir.resolve("sandbox/dangling"), dir.resolve("nowhere"));

        HostFiles.deleteTree(dir.resolve("sandbox"));

        assertThat(dir.resolve("sandbox")).doesNotExist();
        assertThat(precious.resolve("passwd")).hasContent("root:x:0:0");
    }

    @Test
    void deleteTreeOfALinkRemovesTheLinkNotItsTarget() throws IOException {
        Path precious = Files.createDirectories(dir.resolve("host"));
        Files.writeString(precious.resolve("keep"), "x");
        Path link = Files.createSymbolicLink(dir.resolve("run"), precious);

        HostFiles.deleteTree(link);

        assertThat(Files.exists(link, LinkOption.NOFOLLOW_LINKS)).isFalse();
        assertThat(precious.resolve("keep")).hasContent("x");
    }

    @Test
    void deleteTreeOfAMissingTreeIsFine() {
        HostFiles.deleteTree(dir.resolve("never-made"));
        assertThat(dir).isEmptyDirectory();
    }

    @Test
    void deleteTreeRemovesEveryLevel() throws IOException {
        Path top = dir.resolve("t");
        Path d = top;
        for (int i = 0; i < 50; i++) {
            d = Files.createDirectories(d.resolve("d" + i));
            Files.writeString(d.resolve("f"), "x");
        }
        HostFiles.deleteTree(top);
        assertThat(dir).isEmptyDirectory();
    }
}
