package dev.airlock.core.contract;

import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.SandboxBroker;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.RunRequest;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * One concern of the driver contract: one real engine on the driver under test per concern. After
 * the concern's tests, the engine is closed and the concern fails if anything of its sandboxes
 * remains on the host (what counts is the driver's to say: {@link DriverContract#leftovers}).
 *
 * <p>One instance per class, so that {@code @BeforeAll} can ask the driver's contract for a driver.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class ContractTestBase {

    /** The driver under test and what the kit needs to know of it. */
    protected final DriverContract driver;
    protected Engine engine;

    protected ContractTestBase(DriverContract driver) {
        this.driver = driver;
    }

    @BeforeAll
    void openEngine() {
        assumeTrue(driver.runs(getClass()), "this driver's test runs only some concerns of the contract");
        engine = new Engine(driver.newDriver(), broker());
    }

    /** What every sandbox of the concern starts from: the driver test's choice ({@link DriverContract#sandboxSpec}). */
    protected SandboxSpec spec() {
        return driver.sandboxSpec();
    }

    /**
     * Whether the sandboxes are of the {@code system} image (the host's /usr with a synthesized
     * /etc): the few cases about what of the host that image leaves out hold only for it; a stored
     * image's files are its own.
     */
    protected boolean systemImage() {
        return SandboxSpec.SYSTEM_IMAGE.equals(spec().image());
    }

    /** A one-shot run of {@code code} in a sandbox of {@link #spec()}. */
    protected RunRequest request(Language language, String code) {
        return new RunRequest(language, code, null, spec());
    }

    /** The broker the concern's engine attaches sandboxes to: none, unless the concern is about the bridge. */
    protected SandboxBroker broker() {
        return SandboxBroker.NONE;
    }

    @AfterAll
    void closeEngineAndCheckNothingLeaked() {
        if (engine == null) {
            return; // a concern this driver's test does not run
        }
        String prefix = "al-" + engine.driver().instance() + "-";
        engine.close();
        assertThat(driver.leftovers(prefix)).as("leftovers of this test class's sandboxes").isEmpty();
    }

    /** Whether the sandboxes run on gVisor's Sentry rather than the host's kernel (see {@link SandboxKernel#GVISOR}). */
    protected boolean gvisor() {
        return driver.kernel() == SandboxKernel.GVISOR;
    }

    /** Whether the sandboxes run in a virtual machine's own kernel (see {@link SandboxKernel#GUEST}). */
    protected boolean guest() {
        return driver.kernel() == SandboxKernel.GUEST;
    }

    /** Whether a sandbox's processes are host processes (only under the host's kernel: not gVisor's tasks, not a guest's). */
    protected boolean sandboxProcessesAreHostProcesses() {
        return driver.kernel() == SandboxKernel.HOST;
    }

    /**
     * The uid a file or directory of host root's shows inside: unmapped (65534) in the sandbox's own
     * user namespace; under gVisor, which has none of ours, the host's owner as it is (0); in a
     * guest, the guest's root (0), which owns the guest's image. Either way the sandbox user is not its owner.
     */
    protected int hostRootShownAs() {
        return driver.kernel() == SandboxKernel.HOST ? 65534 : 0;
    }

    /**
     * The time a walk of a sandbox's whole tree may take: about 30 s through gVisor's gofer, and
     * minutes through a guest's 9p under software emulation on a loaded host (155 s and over 4 min
     * were seen). The time is about the walk, not a control.
     */
    protected Duration treeWalkTimeout() {
        return gvisor() ? Duration.ofMinutes(4) : scaled(Duration.ofMinutes(2));
    }

    /** {@code timeout} multiplied by the driver's {@link DriverContract#timeScale()}: for timeouts that are about a control, not speed. */
    protected Duration scaled(Duration timeout) {
        return timeout.multipliedBy(driver.timeScale());
    }

    protected ExecResult run(Language language, String code) {
        return engine.run(request(language, code)).result();
    }

    protected ExecResult run(Language language, String code, Limits limits) {
        return engine.run(new RunRequest(language, code, null, spec().withLimits(limits))).result();
    }

    protected ExecResult python(String code) {
        return run(Language.PYTHON, code);
    }

    protected ExecResult sh(String code) {
        return run(Language.SH, code);
    }

    /** Runs {@code argv} in a live sandbox, with a minute to finish. */
    protected static ExecResult exec(Sandbox sb, String... argv) {
        return sb.exec(ExecRequest.of(argv).withTimeout(Duration.ofSeconds(60)));
    }

    /** Runs {@code code} with the host's python3 in a live sandbox. */
    protected static ExecResult python(Sandbox sb, String code) {
        sb.writeFile("/tmp/t.py", code.getBytes(StandardCharsets.UTF_8));
        return exec(sb, "/usr/bin/python3", "/tmp/t.py");
    }

    /** Asserts that the program exited 0, showing its output when it did not; returns it. */
    protected static ExecResult ok(ExecResult r) {
        assertThat(r.endReason()).as("end reason; stdout: %s; stderr: %s", r.stdoutText(), r.stderrText()).isEqualTo(EndReason.EXITED);
        assertThat(r.exitCode()).as("exit code; stdout: %s; stderr: %s", r.stdoutText(), r.stderrText()).isZero();
        return r;
    }
}
