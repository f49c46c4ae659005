package dev.airlock.oci;

import dev.airlock.core.HostFiles;
import dev.airlock.core.Limits;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A sandbox whose {@code /workspace} lies on a read-only host tree ({@link SandboxSpec#workspaceBase()}),
 * as the server makes for a restore from a snapshot: the tree's files (owned by an id no host
 * account uses) are the sandbox user's inside; writes, deletions and chmods go to the sandbox's own
 * upper layer and never reach the tree or a sibling; the disk size still bounds new writes; the
 * tree is never writable from inside; destroy leaves no mount.
 */
class WorkspaceOverlayTest extends SandboxTestBase {

    private Path parent;
    private Path tree;

    @BeforeEach
    void makeTree() throws IOException {
        parent = Files.createTempDirectory(Path.of("/tmp"), "al-tree");
        Files.setPosixFilePermissions(parent, PosixFilePermissions.fromString("rwx------"));
        tree = Files.createDirectory(parent.resolve("tree"));
        Files.createDirectories(tree.resolve("sub"));
        Files.writeString(tree.resolve("a.txt"), "from the snapshot");
        Files.writeString(tree.resolve("sub/b.txt"), "deep");
        Files.writeString(tree.resolve("gone.txt"), "delete me");
        Files.setPosixFilePermissions(tree.resolve("a.txt"), PosixFilePermissions.fromString("r--r--r--"));
        try (var all = Files.walk(tree)) {
            for (Path p : all.toList()) {
                Files.setAttribute(p, "unix:uid", SandboxSpec.WORKSPACE_OWNER, LinkOption.NOFOLLOW_LINKS);
                Files.setAttribute(p, "unix:gid", SandboxSpec.WORKSPACE_OWNER, LinkOption.NOFOLLOW_LINKS);
            }
        }
    }

    @AfterEach
    void removeTree() {
        HostFiles.deleteTree(parent);
    }

    private static String sh(Sandbox sb, String script) {
        return ok(exec(sb, "sh", "-c", script)).stdoutText();
    }

    /**
     * Issue 29: a shared tree was owned by host uid 1000, which is the first real account on most
     * hosts (who could then own, and change, every fork's files had they a way in). Its owner is an
     * id no account uses: none of this host's, above every range distributions and systemd hand
     * out, below every sandbox's host ids.
     */
    @Test
    void theTreesOwnerIsNoHostAccount() throws IOException {
        int owner = SandboxSpec.WORKSPACE_OWNER;
        for (String db : List.of("/etc/passwd", "/etc/group")) {
            assertThat(Files.readAllLines(Path.of(db))).as(db).noneMatch(l -> l.split(":").length > 2 && l.split(":")[2].equals(Integer.toString(owner)));
        }
        assertThat((long) owner).isGreaterThanOrEqualTo(1_879_048_192L).isLessThan(OciConfig.DEFAULT_HOST_ID_BASE);
        assertThat(owner).isNotEqualTo(SystemImage.SANDBOX_UID);
    }

    @Test
    void siblingsShareTheTreeCopyOnWriteAndNeverChangeIt() throws IOException {
        SandboxSpec spec = SandboxSpec.defaults().withLimits(Limits.DEFAULTS.withDiskBytes(8L << 20)).withWorkspaceBase(tree);
        List<Sandbox> forks = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                forks.add(engine.create(spec));
            }
            for (Sandbox f : forks) {
                assertThat(sh(f, "cat /workspace/a.txt /workspace/sub/b.txt")).isEqualTo("from the snapshotdeep");
                assertThat(sh(f, "stat -c '%u:%g %a' /workspace/a.txt /workspace/sub")).isEqualTo("1000:1000 444\n1000:1000 755\n");
            }
            Sandbox first = forks.getFirst();
            sh(first, "chmod 644 /workspace/a.txt && echo changed > /workspace/a.txt && rm /workspace/gone.txt && echo new > /workspace/sub/c.txt"
                    + " && chmod 700 /workspace/sub");
            assertThat(sh(first, "cat /workspace/a.txt; stat -c %a /workspace/a.txt /workspace/sub; ls /workspace"))
                    .isEqualTo("changed\n644\n700\na.txt\nsub\n");
            for (Sandbox other : forks.subList(1, 3)) {
                assertThat(sh(other, "cat /workspace/a.txt /workspace/gone.txt; stat -c %a /workspace/a.txt; ls /workspace/sub"))
                        .isEqualTo("from the snapshotdelete me444\nb.txt\n");
            }
            assertThat(Files.readString(tree.resolve("a.txt"))).isEqualTo("from the snapshot");
            assertThat(tree.resolve("gone.txt")).exists();
            assertThat(tree.resolve("sub/c.txt")).doesNotExist();

            Path upper = workspaceDir(first).resolve(WorkspaceOverlay.CAP).resolve("upper");
            assertThat(Files.readString(upper.resolve("a.txt"))).isEqualTo("changed\n");
            assertThat(Files.getAttribute(upper.resolve("a.txt"), "unix:uid")).as("the sandbox's own host uid")
                    .isEqualTo(Files.getAttribute(upper, "unix:uid")).isNotEqualTo(SystemImage.SANDBOX_UID);
            assertThat(Files.getAttribute(workspaceDir(first), "unix:mode")).as("no other host user reaches into it").isEqualTo(040700);
            assertThat(Files.getAttribute(workspaceDir(first), "unix:uid")).as("the sandbox's host root id, which runc binds it as")
                    .isEqualTo((int) Files.getAttribute(upper, "unix:uid") - SystemImage.SANDBOX_UID);
            Path untouched = workspaceDir(forks.get(1)).resolve(WorkspaceOverlay.CAP).resolve("upper");
            try (var s = Files.list(untouched)) {
                assertThat(s.toList()).as("a fork that wrote nothing holds nothing of its own").isEmpty();
            }

            // the disk size bounds what is written, copy-ups included
            var full = exec(first, "sh", "-c", "head -c 16777216 /dev/zero > /workspace/big");
            assertThat(full.exitCode()).isNotZero();
            assertThat(full.stderrText()).contains("No space left");
            // nothing inside reaches the tree but through the overlay: no mount shows its host path, and none can be made
            assertThat(sh(first, "cat /proc/self/mountinfo")).doesNotContain(parent.toString());
            assertThat(exec(first, "sh", "-c", "mount -o remount,rw /workspace").exitCode()).isNotZero();
        } finally {
            forks.forEach(Sandbox::close);
        }
        assertThat(Files.readAllLines(Path.of("/proc/self/mountinfo"))).noneMatch(l -> l.contains(parent.toString()));
    }

    /** The host directory of the sandbox's overlay, found by its mount point. */
    private static Path workspaceDir(Sandbox sb) throws IOException {
        String suffix = "/" + sb.id().value() + "/" + OciDriver.WORKSPACE_DIR + "/" + WorkspaceOverlay.MERGED;
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream().map(l -> l.split(" ")[4]).filter(p -> p.endsWith(suffix))
                .map(p -> Path.of(p).getParent()).findFirst().orElseThrow(() -> new AssertionError("no overlay mounted for " + sb.id()));
    }
}
