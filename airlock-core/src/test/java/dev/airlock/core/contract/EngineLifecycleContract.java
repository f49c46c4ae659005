package dev.airlock.core.contract;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.OutputListener;
import dev.airlock.core.RunRequest;
import dev.airlock.core.RunResult;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

public abstract class EngineLifecycleContract extends ContractTestBase {

    protected EngineLifecycleContract(DriverContract driver) {
        super(driver);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
            "python     | import sys; print('py', sys.version_info[0])                                  | py 3",
            "javascript | console.log('js', 1 + 1)                                                       | js 2",
            "bash       | echo bash $((40 + 2))                                                          | bash 42",
            "sh         | echo sh ok                                                                     | sh ok",
            "java       | class Main { public static void main(String[] a) { System.out.println(\"java \" + (6 * 7)); } } | java 42"})
    void everyLanguageRunsItsCode(String language, String code, String expected) {
        // Python and the shells are what every image of the contract has; node and Java are the host's
        assumeTrue(systemImage() || List.of("python", "bash", "sh").contains(language), "the host's " + language + " is in the system image only");
        // a JVM compiling its source took 38 s in a guest under software emulation with other work on the host: the time is
        // about speed, not a control, so it scales with the tier
        ExecResult r = ok(run(Language.parse(language), code, spec().limits().withTimeout(scaled(Duration.ofSeconds(30)))));
        assertThat(r.stdoutText().trim()).isEqualTo(expected);
    }

    @Test
    void exitCodeStdoutAndStderrComeBackSeparately() {
        ExecResult r = python("import sys; print('out'); print('err', file=sys.stderr); sys.exit(7)");
        assertThat(r.stdoutText()).isEqualTo("out\n");
        assertThat(r.stderrText()).isEqualTo("err\n");
        assertThat(r.exitCode()).isEqualTo(7);
        assertThat(r.endReason()).isEqualTo(EndReason.EXITED);
    }

    @Test
    void stdinReachesTheProgram() {
        RunResult r = engine.run(new RunRequest(Language.PYTHON, "import sys; print(sys.stdin.read().upper())",
                "hello airlock".getBytes(StandardCharsets.UTF_8), spec()));
        assertThat(r.result().stdoutText()).isEqualTo("HELLO AIRLOCK\n");
    }

    @Test
    void programRunsAsTheUnprivilegedSandboxUserInWorkspace() {
        ExecResult r = sh("id -un; id -u; pwd; echo $HOME");
        assertThat(r.stdoutText()).isEqualTo("sandbox\n1000\n/workspace\n/workspace\n");
    }

    @Test
    void javaFromAlternativesResolvesInside() {
        assumeTrue(systemImage(), "the host's Java is in the system image only");
        ExecResult r = sh("readlink -f \"$(command -v java)\"; java -version 2>&1 | head -1");
        assertThat(r.exitCode()).isZero();
        assertThat(r.stdoutText()).contains("/usr/lib/jvm/").contains("version");
    }

    @Test
    void missingProgramIsAStartFailureNotACrash() throws Exception {
        try (Sandbox sandbox = engine.create(spec())) {
            ExecResult r = sandbox.exec(ExecRequest.of("no-such-program-here"));
            assertThat(r.endReason()).isEqualTo(EndReason.START_FAILED);
            assertThat(r.exitCode()).isEqualTo(127);
            assertThat(r.message()).contains("no-such-program-here").contains("No such file or directory");
            // The sandbox is still usable.
            assertThat(sandbox.exec(ExecRequest.of("true")).exitCode()).isZero();
        }
    }

    @Test
    void anExecutableScriptWithoutAnInterpreterLineRunsWithTheShell() throws Exception {
        try (Sandbox sandbox = engine.create(spec())) {
            // no "#!": the kernel refuses it (ENOEXEC), and execvp's rule (POSIX, glibc's; not musl's) is to run it with /bin/sh
            sandbox.writeFile("/workspace/plain", "echo ran by sh: $0 $1\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
            assertThat(sandbox.exec(ExecRequest.of("chmod", "755", "/workspace/plain")).exitCode()).isZero();
            ExecResult byPath = sandbox.exec(ExecRequest.of("/workspace/plain", "one"));
            assertThat(byPath.stdoutText()).as(byPath.message()).isEqualTo("ran by sh: /workspace/plain one\n");
            ExecResult byName = sandbox.exec(ExecRequest.of("plain", "two").withEnv(java.util.Map.of("PATH", "/nowhere:/workspace:/usr/bin:/bin")));
            assertThat(byName.stdoutText()).as(byName.message()).isEqualTo("ran by sh: /workspace/plain two\n");
        }
    }

    @Test
    void outputStreamsWhileTheProgramRuns() throws Exception {
        CountDownLatch firstLine = new CountDownLatch(1);
        try (Sandbox sandbox = engine.create(spec())) {
            CompletableFuture<ExecResult> done = CompletableFuture.supplyAsync(() -> sandbox.exec(
                    ExecRequest.of("sh", "-c", "echo first; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo second"),
                    new OutputListener() {
                        @Override
                        public void stdout(byte[] chunk) {
                            firstLine.countDown();
                        }
                    }));
            // The program cannot finish before the test has seen its first line: output is streamed.
            assertThat(firstLine.await(20, TimeUnit.SECONDS)).isTrue();
            assertThat(done).isNotDone();
            sandbox.writeFile("/tmp/go", new byte[0]);
            assertThat(done.get(20, TimeUnit.SECONDS).stdoutText()).isEqualTo("first\nsecond\n");
        }
    }

    @Test
    @Tag("smoke")
    void timeoutKillsTheProcessTreeAndKeepsEarlierOutput() {
        ExecResult r = run(Language.SH, "echo before; (sleep 1000 &) ; sleep 1000",
                Limits.DEFAULTS.withTimeout(Duration.ofMillis(700)));
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.timedOut()).isTrue();
        assertThat(r.stdoutText()).isEqualTo("before\n");
        assertThat(r.message()).isEqualTo("timed out after 700ms and was killed");
    }

    @Test
    void interruptingTheCallerCancelsTheExecution() throws Exception {
        AtomicReference<ExecResult> result = new AtomicReference<>();
        CountDownLatch started = new CountDownLatch(1);
        try (Sandbox sandbox = engine.create(spec())) {
            Thread caller = Thread.ofVirtual().start(() -> result.set(sandbox.exec(
                    ExecRequest.of("sh", "-c", "echo started; sleep 1000"), new OutputListener() {
                        @Override
                        public void stdout(byte[] chunk) {
                            started.countDown();
                        }
                    })));
            assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
            caller.interrupt();
            caller.join(Duration.ofSeconds(20));
            assertThat(result.get().endReason()).isEqualTo(EndReason.CANCELLED);
            assertThat(result.get().stdoutText()).isEqualTo("started\n");
            // Nothing of the cancelled command keeps running in the sandbox.
            ExecResult ps = sandbox.exec(ExecRequest.of("sh", "-c", "ps -eo comm= | grep -c sleep || true"));
            assertThat(ps.stdoutText().trim()).isEqualTo("0");
        }
    }

    @Test
    void destroyingASandboxEndsItsRunningExecutionWithItsOutput() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        Sandbox sandbox = engine.create(spec());
        CompletableFuture<ExecResult> running = CompletableFuture.supplyAsync(() -> sandbox.exec(
                ExecRequest.of("sh", "-c", "echo partial; sleep 1000"), new OutputListener() {
                    @Override
                    public void stdout(byte[] chunk) {
                        started.countDown();
                    }
                }));
        assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
        sandbox.close();
        ExecResult r = running.get(20, TimeUnit.SECONDS);
        assertThat(r.endReason()).isEqualTo(EndReason.CANCELLED);
        assertThat(r.stdoutText()).isEqualTo("partial\n");
        assertThat(driver.leftovers(sandbox.id().value())).isEmpty();
        assertThatThrownBy(() -> sandbox.exec(ExecRequest.of("true")))
                .isInstanceOf(AirlockException.class).hasMessageContaining("is destroyed");
    }

    @Test
    void closingTheEngineKillsEverySandboxItHolds() throws Exception {
        Engine other = new Engine(driver.newDriver());
        String prefix = "al-" + other.driver().instance() + "-";
        Sandbox a = other.create(spec());
        Sandbox b = other.create(spec());
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<ExecResult> running = CompletableFuture.supplyAsync(() -> a.exec(
                ExecRequest.of("sh", "-c", "echo started; sleep 1000"), new OutputListener() {
                    @Override
                    public void stdout(byte[] chunk) {
                        started.countDown();
                    }
                }));
        b.exec(ExecRequest.of("sh", "-c", "sleep 1000 > /dev/null 2>&1 &"));
        assertThat(started.await(20, TimeUnit.SECONDS)).isTrue();
        other.close();
        assertThat(running.get(20, TimeUnit.SECONDS).endReason()).isEqualTo(EndReason.CANCELLED);
        assertThat(driver.leftovers(prefix)).isEmpty();
        assertThatThrownBy(() -> other.create(spec()))
                .isInstanceOf(AirlockException.class).hasMessageContaining("shutting down");
    }

    @Test
    void warmPoolHandsOutFreshSandboxesAndNeverReusesOne() throws Exception {
        SandboxSpec spec = spec();
        try (Engine pooled = new Engine(driver.newDriver(), 2, spec)) {
            String first;
            try (Sandbox s = pooled.create(spec)) {
                first = s.id().value();
                s.exec(ExecRequest.of("sh", "-c", "echo secret > /workspace/left-behind"));
            }
            for (int i = 0; i < 3; i++) {
                try (Sandbox s = pooled.create(spec)) {
                    assertThat(s.id().value()).isNotEqualTo(first);
                    assertThat(s.exec(ExecRequest.of("ls", "-A", "/workspace")).stdoutText()).isEmpty();
                }
            }
        }
    }

    @Test
    void aNonDefaultSpecBypassesThePool() {
        SandboxSpec small = spec().withLimits(Limits.DEFAULTS.withMemoryBytes(64L << 20));
        try (Sandbox s = engine.create(small)) {
            ExecResult r = s.exec(ExecRequest.of("cat", "/proc/self/cgroup"));
            assertThat(r.exitCode()).isZero();
        }
    }

    @Test
    void specEnvironmentReachesThePrograms() {
        SandboxSpec spec = spec().withEnv(Map.of("GREETING", "hi"));
        try (Sandbox s = engine.create(spec)) {
            ExecResult r = s.exec(new ExecRequest(List.of("sh", "-c", "echo $GREETING $EXTRA"), Map.of("EXTRA", "there"), null, null, null));
            assertThat(r.stdoutText()).isEqualTo("hi there\n");
        }
    }

    @Test
    void unknownLanguageIsRefusedBeforeAnythingStarts() {
        assertThatThrownBy(() -> Language.parse("cobol"))
                .isInstanceOf(AirlockException.class)
                .hasMessage("unknown language 'cobol': choose one of python, javascript, bash, sh, java");
    }

    @Test
    void languageWhoseInterpreterTheImageLacksIsAClearError() {
        assertThatThrownBy(() -> engine.driver().check(spec(), List.of("ruby-not-installed")))
                .isInstanceOf(AirlockException.class)
                .hasMessageContaining("the image '" + spec().image() + "' has no 'ruby-not-installed'");
        assertThat(engine.liveCount()).isZero();
    }

    @Test
    void absurdLimitsAreRefusedWithTheFieldAndRange() {
        assertThatThrownBy(() -> Limits.DEFAULTS.withMemoryBytes(1))
                .hasMessage("memory 1 is out of range: give 16m to 64g");
        assertThatThrownBy(() -> Limits.DEFAULTS.withPids(-1))
                .hasMessage("pids -1 is out of range: give 8 to 32768");
        assertThatThrownBy(() -> Limits.parseSize("memory", "lots"))
                .hasMessageContaining("memory 'lots' is not a size");
    }
}
