package dev.airlock.oci;

import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.RunRequest;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressSettings;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * One real engine on this host's runc per test class, for the tests of what is this driver's own
 * (cgroups, runtime state, user-namespace maps, egress wiring); what every driver must do is in
 * the driver contract ({@link RuncContractTest}). After the class, the engine is closed and the
 * class fails if anything of its sandboxes remains: process, runtime state, cgroup, mount or
 * directory.
 */
abstract class SandboxTestBase {

    static final OciDriverConfig CONFIG = OciDriverConfig.defaults();
    static Engine engine;

    @BeforeAll
    static void openEngine() {
        engine = new Engine(new OciDriver(CONFIG), new EgressBroker(EgressSettings.DEFAULTS));
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

    /** Runs {@code argv} in a live sandbox, with a minute to finish. */
    static ExecResult exec(Sandbox sb, String... argv) {
        return sb.exec(ExecRequest.of(argv).withTimeout(Duration.ofSeconds(60)));
    }

    /** Runs {@code code} with the host's python3 in a live sandbox. */
    static ExecResult python(Sandbox sb, String code) {
        sb.writeFile("/tmp/t.py", code.getBytes(StandardCharsets.UTF_8));
        return exec(sb, "/usr/bin/python3", "/tmp/t.py");
    }

    /** Asserts that the program exited 0, showing its output when it did not; returns it. */
    static ExecResult ok(ExecResult r) {
        assertThat(r.endReason()).as("end reason; stdout: %s; stderr: %s", r.stdoutText(), r.stderrText()).isEqualTo(EndReason.EXITED);
        assertThat(r.exitCode()).as("exit code; stdout: %s; stderr: %s", r.stdoutText(), r.stderrText()).isZero();
        return r;
    }

    static void assumeCurl() {
        assumeThat(Files.isExecutable(Path.of("/usr/bin/curl"))).as("/usr/bin/curl on the host").isTrue();
    }
}
