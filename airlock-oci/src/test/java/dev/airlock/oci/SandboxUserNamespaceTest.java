package dev.airlock.oci;

import dev.airlock.agent.AgentBinary;
import dev.airlock.core.AirlockException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The step that creates a sandbox's user namespace as the sandbox's own host uid, on its own: the
 * holder runs as that uid (not root), its namespace is new and mapped as asked, and it ends when
 * closed. Uses a host id above every sandbox slot ({@link UidSlots#end}), so no sandbox's is taken.
 */
class SandboxUserNamespaceTest {

    private static final long TEST_UID = UidSlots.end(OciConfig.DEFAULT_HOST_ID_BASE) + 1_000_000;

    @TempDir
    Path dir;

    @Test
    void theNamespaceIsCreatedByTheSandboxsOwnHostUidAndMapped() throws Exception {
        Path binary = AgentBinary.installTo(dir);
        long holderPid;
        try (SandboxUserNamespace ns = SandboxUserNamespace.create(binary, TEST_UID, dir.resolve("log"))) {
            holderPid = Long.parseLong(ns.path().split("/")[2]);
            Path proc = Path.of("/proc", Long.toString(holderPid));
            assertThat(Files.readAllLines(proc.resolve("status")).stream().filter(l -> l.startsWith("Uid:")).findFirst().orElseThrow())
                    .as("real, effective, saved and filesystem uid: the sandbox's, not root").matches("Uid:\\s+" + TEST_UID + "(\\s+" + TEST_UID + "){3}");
            assertThat(Files.readSymbolicLink(Path.of(ns.path()))).as("a namespace of its own")
                    .isNotEqualTo(Files.readSymbolicLink(Path.of("/proc/self/ns/user")));
            for (String map : new String[] {"uid_map", "gid_map"}) {
                assertThat(Files.readString(proc.resolve(map)).trim().split("\\s+")).as(map)
                        .containsExactly("0", Long.toString(TEST_UID), Integer.toString(OciConfig.ID_RANGE));
            }
        }
        assertThat(ProcessHandle.of(holderPid).map(ProcessHandle::isAlive)).as("the holder ended with close()").isNotEqualTo(java.util.Optional.of(true));
    }

    /** Host root must never be the creator: uid 0 is refused by the holder itself, with a message. */
    @Test
    void theHolderRefusesToCreateANamespaceAsRoot() throws Exception {
        Path binary = AgentBinary.installTo(dir);
        assertThatThrownBy(() -> SandboxUserNamespace.create(binary, 0, dir.resolve("log")))
                .isInstanceOf(AirlockException.class)
                .hasMessageContaining("could not be created as its own host uid")
                .hasMessageContaining("--hold-user-namespace needs a host uid above 0");
    }
}
