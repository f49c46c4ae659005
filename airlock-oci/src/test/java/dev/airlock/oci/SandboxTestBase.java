package dev.airlock.oci;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.RunRequest;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One real engine on this host's runc per test class. After the class, the engine is closed and
 * the class fails if anything of its sandboxes remains: process, runtime state, cgroup, mount or
 * directory.
 */
abstract class SandboxTestBase {

    static final OciDriverConfig CONFIG = OciDriverConfig.defaults();
    static Engine engine;

    @BeforeAll
    static void openEngine() {
        engine = new Engine(new OciDriver(CONFIG));
    }

    @AfterAll
    static void closeEngineAndCheckNothingLeaked() {
        String prefix = "al-" + engine.driver().instance() + "-";
        engine.close();
        assertThat(new LeakCheck(CONFIG).find(prefix)).as("leftovers of this test class's sandboxes").isEmpty();
    }

    static ExecResult run(Language language, String code) {
        return engine.run(RunRequest.of(language, code)).result();
    }

    static ExecResult run(Language language, String code, Limits limits) {
        return engine.run(new RunRequest(language, code, null, new SandboxSpec(SandboxSpec.SYSTEM_IMAGE, limits, Map.of()))).result();
    }

    static ExecResult python(String code) {
        return run(Language.PYTHON, code);
    }

    static ExecResult sh(String code) {
        return run(Language.SH, code);
    }
}
