package dev.airlock.it;

import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import dev.airlock.client.SnapshotInfo;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * On the container tier (runc) the forks of a file snapshot share its /workspace copy-on-write:
 * one read-only host tree per snapshot, idmapped into each fork's user namespace as the lower layer
 * of an overlay whose upper is the fork's own capped tmpfs. Each fork sees the files, may change,
 * chmod and delete them, and no change reaches a sibling, the original or the tree; the uppers
 * hold only what each fork wrote; the disk size bounds new writes; links and special files of the
 * original never become part of the tree, which no fork can reach but through its overlay; after
 * the forks and the snapshot are gone no mount and no tree is left.
 */
class ForkCopyOnWriteTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static LiveServer live;

    @BeforeAll
    static void start() {
        live = LiveServer.start(c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static String sh(RemoteSandbox s, String script) {
        var r = s.exec("sh", "-c", script);
        assertThat(r.exitCode()).as("%s: %s %s", script, r.stdout(), r.stderr()).isZero();
        return r.stdout();
    }

    private Path trees() {
        return live.dataDir.resolve("snapshots").resolve("trees");
    }

    private static List<String> listed(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(p -> !p.equals(dir)).map(p -> dir.relativize(p).toString()).sorted().toList();
        }
    }

    /** The host directory of the fork's overlay upper layer, found by its mount (the sandbox id is in its path). */
    private static Path upperOf(RemoteSandbox s) throws IOException {
        String merged = "/" + s.id() + "/workspace/merged";
        String point = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream().map(l -> l.split(" ")[4])
                .filter(p -> p.endsWith(merged)).findFirst().orElseThrow(() -> new AssertionError("no overlay mounted for " + s.id()));
        return Path.of(point).getParent().resolve("cap").resolve("upper");
    }

    @Test
    void forksShareOneTreeCopyOnWriteAndNothingOfItIsLeft() throws Exception {
        SnapshotInfo snap;
        try (RemoteSandbox original = live.client.create(SandboxSpec.defaults())) {
            sh(original, "mkdir -p /workspace/sub && echo one > /workspace/a.txt && echo deep > /workspace/sub/b.txt"
                    + " && echo doomed > /workspace/gone.txt && chmod 444 /workspace/a.txt && echo scratch > /tmp/t.txt"
                    // hostile: a link to a host-looking file, a link to a directory, a fifo: none may enter the tree
                    + " && ln -s /etc/shadow /workspace/shadow && ln -s / /workspace/root && mkfifo /workspace/fifo");
            snap = original.snapshot();
            assertThat(snap.files()).isEqualTo(4);

            List<RemoteSandbox> forks = new ArrayList<>();
            try {
                HttpResponse<String> made = live.raw("POST", "/v1/snapshots/" + snap.id() + "/fork",
                        "{\"count\": 3, \"limits\": {\"disk\": \"8m\"}}");
                assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
                for (JsonNode s : JSON.readTree(made.body()).path("sandboxes")) {
                    forks.add(live.client.get(s.path("id").asString()));
                }
                assertThat(forks).hasSize(3);
                for (RemoteSandbox f : forks) {
                    assertThat(sh(f, "cat /workspace/a.txt /workspace/sub/b.txt /workspace/gone.txt /tmp/t.txt"))
                            .isEqualTo("one\ndeep\ndoomed\nscratch\n");
                    assertThat(sh(f, "stat -c '%U %a' /workspace/a.txt /workspace/sub")).isEqualTo("sandbox 444\nsandbox 755\n");
                    assertThat(sh(f, "ls -A /workspace")).as("no link, no fifo; output/ is made for every sandbox").isEqualTo("a.txt\ngone.txt\noutput\nsub\n");
                    assertThat(sh(f, "cat /proc/self/mountinfo")).as("the tree's host path is in no mount of the sandbox")
                            .doesNotContain(live.dataDir.toString());
                }

                // one tree on the host for the three, regular files and directories only, owned by an id no host account uses
                try (Stream<Path> t = Files.list(trees())) {
                    assertThat(t.toList()).hasSize(1);
                }
                Path tree = Files.list(trees()).findFirst().orElseThrow();
                assertThat(listed(tree)).containsExactly("a.txt", "gone.txt", "sub", "sub/b.txt");
                try (Stream<Path> all = Files.walk(tree)) {
                    for (Path p : all.toList()) {
                        assertThat(Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) || Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS))
                                .as("%s is a regular file or directory", p).isTrue();
                        assertThat(Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS)).as("no host account's id")
                                .isEqualTo(dev.airlock.core.SandboxSpec.WORKSPACE_OWNER);
                    }
                }
                assertThat(Files.getAttribute(trees(), "unix:mode")).as("only host root enters trees/").isEqualTo(040700);

                // the fork's user changes, chmods and deletes the snapshot's files, and writes new ones
                RemoteSandbox first = forks.getFirst();
                sh(first, "chmod 644 /workspace/a.txt && echo changed > /workspace/a.txt && rm /workspace/gone.txt"
                        + " && echo new > /workspace/sub/new.txt && chmod 700 /workspace/sub");
                assertThat(sh(first, "cat /workspace/a.txt; stat -c %a /workspace/a.txt /workspace/sub; ls /workspace"))
                        .isEqualTo("changed\n644\n700\na.txt\noutput\nsub\n");
                for (RemoteSandbox other : List.of(forks.get(1), forks.get(2), original)) {
                    assertThat(sh(other, "cat /workspace/a.txt /workspace/gone.txt; ls /workspace/sub")).isEqualTo("one\ndoomed\nb.txt\n");
                }
                assertThat(Files.readString(tree.resolve("a.txt"))).isEqualTo("one\n");
                assertThat(listed(tree)).containsExactly("a.txt", "gone.txt", "sub", "sub/b.txt");

                // the uppers hold only what each fork wrote: the server's empty output/ in each; in the first, also the
                // copied-up a.txt, the whiteout of gone.txt, sub (its mode changed) and its new file
                assertThat(listed(upperOf(first))).containsExactly("a.txt", "gone.txt", "output", "sub", "sub/new.txt");
                assertThat(listed(upperOf(forks.get(1)))).containsExactly("output");
                assertThat(listed(upperOf(forks.get(2)))).containsExactly("output");

                // the disk size (8 MiB) bounds new writes
                var full = first.exec("sh", "-c", "head -c 16777216 /dev/zero > /workspace/big");
                assertThat(full.exitCode()).isNotZero();
                assertThat(full.stderr()).contains("No space left");
                // the lower is read-only even to the sandbox's root, and nothing can be remounted
                assertThat(first.exec("sh", "-c", "mount -o remount,rw /workspace || umount /workspace").exitCode()).isNotZero();
            } finally {
                forks.forEach(RemoteSandbox::close);
            }
        }
        // the last fork's teardown ends in the background, after the delete's answer
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            try (Stream<Path> t = Files.list(trees())) {
                assertThat(t.toList()).as("the tree goes with the last fork").isEmpty();
            }
        });
        live.client.deleteSnapshot(snap.id());
        assertThat(Files.readAllLines(Path.of("/proc/self/mountinfo"))).as("no overlay, lower or cap mount is left")
                .noneMatch(l -> l.contains(live.sandboxPrefix) && l.contains("/workspace/"));
        assertThat(LiveServer.leftovers(live.sandboxPrefix)).isEmpty();
    }
}
