package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
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
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A state directory the sandboxes cannot reach is refused when the driver starts, with one sentence
 * that names the directory in the way and what to do, instead of the runtime's "permission denied"
 * at every create.
 */
class StateDirectoryPermissionTest {

    private Path privateHome;

    @BeforeEach
    void makePrivateDirectory() throws IOException {
        // short: every sandbox's sockets must fit below the state root
        privateHome = Files.createTempDirectory(Path.of("/tmp"), "al");
        Files.setPosixFilePermissions(privateHome, PosixFilePermissions.fromString("rwx------"));
    }

    @AfterEach
    void removeIt() {
        HostFiles.deleteTree(privateHome);
    }

    @Test
    void stateDirectoryInsideA0700DirectoryIsRefusedAtStartNamingTheDirectoryAndTheFix() {
        Path stateRoot = privateHome.resolve("s");
        OciDriverConfig config = SandboxTestBase.CONFIG.withStateRoot(stateRoot);

        assertThatThrownBy(() -> new OciDriver(config).close())
                .isInstanceOf(AirlockException.class)
                .hasMessageStartingWith("cannot use " + stateRoot + " as the state directory: " + privateHome
                        + " (a parent of it) is mode rwx------")
                .hasMessageContaining("chmod o+x " + privateHome)
                .hasMessageContaining("--state-dir");
        assertThat(stateRoot.resolve("engines")).as("nothing set up under the refused root").doesNotExist();
    }

    @Test
    void stateDirectoryTooLongForTheSandboxesSocketsIsRefusedAtStart() {
        Path stateRoot = privateHome.resolve("x".repeat(StateDirectory.MAX_ROOT_BYTES));
        OciDriverConfig config = SandboxTestBase.CONFIG.withStateRoot(stateRoot);

        assertThatThrownBy(() -> new OciDriver(config).close())
                .isInstanceOf(AirlockException.class)
                .hasMessageStartingWith("cannot use " + stateRoot + " as the state directory: its path is ")
                .hasMessageContaining("choose a --state-dir of at most " + StateDirectory.MAX_ROOT_BYTES + " bytes");
        assertThat(stateRoot).as("nothing created").doesNotExist();
    }

    /** The fix the message gives is enough: with o+x on the parent, a sandbox starts and runs. */
    @Test
    void theAdvisedChmodMakesTheSameStateDirectoryWork() throws IOException {
        Files.setPosixFilePermissions(privateHome, PosixFilePermissions.fromString("rwx-----x"));
        OciDriverConfig config = SandboxTestBase.CONFIG.withStateRoot(privateHome.resolve("s"));
        String prefix;
        try (Engine engine = new Engine(new OciDriver(config))) {
            prefix = "al-" + engine.driver().instance() + "-";
            try (Sandbox sandbox = engine.create(SandboxSpec.defaults())) {
                ExecResult r = sandbox.exec(ExecRequest.of("id", "-u"));
                assertThat(r.stdoutText()).as("stderr: %s", r.stderrText()).isEqualTo("1000\n");
            }
        }
        assertThat(new LeakCheck(config).find(prefix)).isEmpty();
    }
}
