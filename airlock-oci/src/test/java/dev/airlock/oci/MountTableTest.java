package dev.airlock.oci;

import dev.airlock.core.ExecResult;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sandbox's mount table shows where each of its mounts came from on the host: for this driver
 * that could name its state directory, the engine's and the sandbox's own. It names none.
 */
class MountTableTest extends SandboxTestBase {

    /** The mount table shows where each mount came from: none of it may name the host's directories. */
    @Test
    void mountinfoNamesNoHostDirectoryOfTheEngine() {
        Path stateRoot = CONFIG.stateRoot();
        Path engineDir = stateRoot.resolve("engines").resolve(engine.driver().instance());
        try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
            Path runDir = engineDir.resolve("sandboxes").resolve(sb.id().value()).resolve("run");
            ExecResult r = ok(exec(sb, "cat", "/proc/self/mountinfo", "/proc/self/mounts"));

            assertThat(r.stdoutText()).contains(" /run/airlock ").contains(" /proc/meminfo ")
                    .doesNotContain(stateRoot.toString() + "/")
                    .doesNotContain(engineDir.toString())
                    .doesNotContain(runDir.toString())
                    .doesNotContain("/engines/");
        }
    }
}
