package dev.airlock.oci;

import dev.airlock.core.Engine;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each engine instance's files live on a tmpfs of its own, mounted in the host's mount namespace:
 * it must go with the instance, and a crashed instance's must go when the next engine reaps it.
 * A state root of its own (short, for the sockets), so no other engine reaps what this test leaves.
 */
class InstanceTmpfsTest {

    private Path stateRoot;
    private OciDriverConfig config;

    @BeforeEach
    void privateStateRoot() throws IOException {
        Path parent = Files.createTempDirectory(Path.of("/tmp"), "al");
        Files.setPosixFilePermissions(parent, PosixFilePermissions.fromString("rwx--x--x"));
        stateRoot = parent.resolve("s");
        config = SandboxTestBase.CONFIG.withStateRoot(stateRoot);
    }

    @AfterEach
    void removeIt() {
        InstanceTmpfs.unmount(stateRoot.resolve("engines").resolve("crashed1"));
        InstanceTmpfs.unmount(stateRoot.resolve("engines").resolve("crashed2"));
        HostFiles.deleteTree(stateRoot.getParent());
    }

    @Test
    void aLiveInstancesTmpfsIsNoLeakAndGoesWithTheInstance() {
        Path instanceDir;
        String prefix;
        try (Engine engine = new Engine(new OciDriver(config))) {
            prefix = "al-" + engine.driver().instance() + "-";
            instanceDir = stateRoot.resolve("engines").resolve(engine.driver().instance());
            try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
                assertThat(InstanceTmpfs.isMountPoint(instanceDir)).isTrue();
                assertThat(new LeakCheck(config).findNow(prefix)).as("the live instance's tmpfs").noneMatch(l -> l.startsWith("mount:"));
            }
        }
        assertThat(InstanceTmpfs.isMountPoint(instanceDir)).isFalse();
        assertThat(instanceDir).doesNotExist();
        assertThat(new LeakCheck(config).find(prefix)).isEmpty();
    }

    /** A crashed instance: its tmpfs still mounted, its lock file free. The leak check sees it; the next start removes it. */
    @Test
    void aCrashedInstancesTmpfsIsUnmountedWhenTheNextEngineReapsIt() throws IOException {
        Path dead = stateRoot.resolve("engines").resolve("crashed1");
        Files.createDirectories(dead);
        InstanceTmpfs.mount(dead);
        Files.createDirectories(dead.resolve("sandboxes").resolve("al-crashed1-0000000000000000"));
        Files.writeString(dead.resolve("lock"), "");
        assertThat(new LeakCheck(config).findNow("al-crashed1-")).anyMatch(l -> l.startsWith("mount:") && l.contains(dead.toString()));

        try (Engine next = new Engine(new OciDriver(config))) {
            assertThat(next.reapedAtStart()).contains("state of instance crashed1");
        }

        assertThat(InstanceTmpfs.isMountPoint(dead)).isFalse();
        assertThat(dead).doesNotExist();
        assertThat(new LeakCheck(config).find("al-crashed1-")).isEmpty();
    }

    /**
     * A crashed instance whose sandbox had its /workspace on a snapshot tree ({@link WorkspaceOverlay}):
     * the leak check sees the overlay's mounts, and the next start detaches them with the instance's
     * tmpfs, the tree untouched.
     */
    @Test
    void aCrashedInstancesWorkspaceOverlayIsUnmountedWhenTheNextEngineReapsIt() throws Exception {
        Path tree = Files.createDirectories(stateRoot.getParent().resolve("tree"));
        Files.writeString(tree.resolve("kept.txt"), "kept");
        Path dead = stateRoot.resolve("engines").resolve("crashed2");
        Files.createDirectories(dead);
        InstanceTmpfs.mount(dead);
        Path sandbox = Files.createDirectories(dead.resolve("sandboxes").resolve("al-crashed2-0000000000000000"));
        Files.writeString(dead.resolve("lock"), "");
        long base = 1_900_000_000L;
        // a user namespace mapped as a sandbox's is, held by a process of this test
        Process holder = new ProcessBuilder("unshare", "--user", "sleep", "60").start();
        try {
            Path proc = Path.of("/proc", Long.toString(holder.pid()));
            long until = System.currentTimeMillis() + 5000;
            while (Files.readSymbolicLink(proc.resolve("ns/user")).equals(Files.readSymbolicLink(Path.of("/proc/self/ns/user")))
                    && System.currentTimeMillis() < until) {
                Thread.sleep(20); // not unshared yet
            }
            Files.writeString(proc.resolve("uid_map"), "0 " + base + " 65536\n");
            Files.writeString(proc.resolve("gid_map"), "0 " + base + " 65536\n");
            WorkspaceOverlay.mount(sandbox.resolve(OciDriver.WORKSPACE_DIR), tree, "/proc/" + holder.pid() + "/ns/user",
                    base, 1 << 20);
        } finally {
            holder.destroy();
            holder.waitFor();
        }
        Path merged = sandbox.resolve(OciDriver.WORKSPACE_DIR).resolve(WorkspaceOverlay.MERGED);
        assertThat(Files.readString(merged.resolve("kept.txt"))).isEqualTo("kept");
        assertThat(Files.getAttribute(merged.resolve("kept.txt"), "unix:uid")).as("root's file, mapped through the namespace")
                .isEqualTo((int) base);
        assertThat(new LeakCheck(config).findNow("al-crashed2-")).filteredOn(l -> l.startsWith("mount:")).hasSize(4);

        try (Engine next = new Engine(new OciDriver(config))) {
            assertThat(next.reapedAtStart()).contains("state of instance crashed2");
        }

        assertThat(dead).doesNotExist();
        assertThat(new LeakCheck(config).find("al-crashed2-")).isEmpty();
        assertThat(Files.readString(tree.resolve("kept.txt"))).isEqualTo("kept");
    }
}
