package dev.airlock.it;

import dev.airlock.client.EndReason;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.Language;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxInfo;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** A sandbox's life through the REST API, with the SDK as the client: create, inspect, find, extend, run, destroy. */
class ServerLifecycleTest {

    private static LiveServer live;
    /** A default sandbox (from the warm pool) shared by the execution tests. */
    private static RemoteSandbox shared;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(2));
        shared = live.client.create();
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    @Test
    void createdSandboxReportsTheLimitsEnvLabelsAndLifetimeItWasCreatedWith() {
        SandboxSpec spec = SandboxSpec.builder()
                .memory("256m").pids(100).cpus(0.5).timeout(Duration.ofSeconds(12)).outputLimit("64k")
                .fileSize("8m").openFiles(512).disk("32m")
                .env("GREETING", "hello from the spec")
                .label("team", "search").label("purpose", "lifecycle")
                .ttl(Duration.ofMinutes(5)).idleTimeout(Duration.ofMinutes(2))
                .build();
        try (RemoteSandbox s = live.client.create(spec)) {
            for (SandboxInfo info : new SandboxInfo[] {s.initialInfo(), s.info()}) {
                assertThat(info.id()).isEqualTo(s.id()).matches("al-[a-z0-9]+-[0-9a-f]{16}");
                assertThat(info.running()).isTrue();
                assertThat(info.image()).isEqualTo("system");
                assertThat(info.limits().memoryBytes()).isEqualTo(256L << 20);
                assertThat(info.limits().pids()).isEqualTo(100);
                assertThat(info.limits().cpus()).isEqualTo(0.5);
                assertThat(info.limits().timeout()).isEqualTo(Duration.ofSeconds(12));
                assertThat(info.limits().outputBytes()).isEqualTo(64L << 10);
                assertThat(info.limits().fileSizeBytes()).isEqualTo(8L << 20);
                assertThat(info.limits().openFiles()).isEqualTo(512);
                assertThat(info.limits().diskBytes()).isEqualTo(32L << 20);
                assertThat(info.env()).containsEntry("GREETING", "hello from the spec");
                assertThat(info.labels()).isEqualTo(Map.of("team", "search", "purpose", "lifecycle"));
                assertThat(Duration.between(info.createdAt(), info.expiresAt())).isEqualTo(Duration.ofMinutes(5));
                assertThat(info.idleTimeout()).isEqualTo(Duration.ofMinutes(2));
            }
            ExecResult env = s.exec("printenv", "GREETING");
            assertThat(env.stdout()).isEqualTo("hello from the spec\n");
            ExecResult fds = s.exec("sh", "-c", "ulimit -n");
            assertThat(fds.stdout()).isEqualTo("512\n");
        }
    }

    @Test
    void getAttachesToAnExistingSandboxById() {
        try (RemoteSandbox s = live.client.create(SandboxSpec.builder().label("k", "v").build())) {
            RemoteSandbox attached = live.client.get(s.id());
            assertThat(attached.id()).isEqualTo(s.id());
            assertThat(attached.initialInfo().labels()).isEqualTo(Map.of("k", "v"));
            assertThat(attached.initialInfo().createdAt()).isEqualTo(s.initialInfo().createdAt());
            s.files().write("/workspace/seen-by-both", "same sandbox".getBytes());
            assertThat(attached.files().read("/workspace/seen-by-both")).asString().isEqualTo("same sandbox");
        }
    }

    @Test
    void listFilterKeepsOnlySandboxesCarryingEveryGivenLabel() {
        String run = UUID.randomUUID().toString();
        try (RemoteSandbox a = live.client.create(SandboxSpec.builder().label("run", run).label("role", "a").build());
             RemoteSandbox b = live.client.create(SandboxSpec.builder().label("run", run).label("role", "b").build())) {
            assertThat(live.client.list(Map.of("run", run))).extracting(SandboxInfo::id).containsExactlyInAnyOrder(a.id(), b.id());
            assertThat(live.client.list(Map.of("run", run, "role", "a"))).extracting(SandboxInfo::id).containsExactly(a.id());
            assertThat(live.client.list(Map.of("run", run, "role", "b"))).extracting(SandboxInfo::id).containsExactly(b.id());
            assertThat(live.client.list(Map.of("run", run, "role", "c"))).isEmpty();
            assertThat(live.client.list()).extracting(SandboxInfo::id).contains(a.id(), b.id(), shared.id());
        }
        assertThat(live.client.list(Map.of("run", run))).isEmpty();
    }

    @Test
    void extendTtlSetsExpiryThatLongFromNow() {
        try (RemoteSandbox s = live.client.create(SandboxSpec.builder().ttl(Duration.ofMinutes(1)).build())) {
            SandboxInfo before = s.info();
            SandboxInfo extended = s.extendTtl(Duration.ofHours(2));
            assertThat(extended.expiresAt()).isAfter(before.expiresAt().plus(Duration.ofMinutes(110)));
            assertThat(s.info().expiresAt()).isEqualTo(extended.expiresAt());
            assertThat(extended.createdAt()).isEqualTo(before.createdAt());
        }
    }

    @Test
    void closedSandboxIsGone() {
        RemoteSandbox s = live.client.create(SandboxSpec.builder().label("closing", "yes").build());
        String id = s.id();
        SandboxOnHost onHost = SandboxOnHost.of(id);
        s.exec("true");
        assertThat(onHost.processes()).as("the sandbox's agent runs on the host").isNotEmpty();
        s.close();
        assertThatThrownBy(() -> live.client.get(id)).isInstanceOf(NotFoundException.class)
                .hasMessageContaining(id);
        assertThat(live.client.list()).extracting(SandboxInfo::id).doesNotContain(id);
        assertThat(live.client.delete(id)).isFalse();
        s.close();   // idempotent
        // A killed sandbox's PID 1 may linger a moment as a zombie until the host's init reaps it.
        await().atMost(Duration.ofSeconds(15)).untilAsserted(() ->
                assertThat(onHost.remains()).as("what the closed sandbox left on the host").isEmpty());
    }

    @Test
    void execRunsACommandWithoutAShell() {
        ExecResult r = shared.exec("echo", "hello", "$HOME", "*");
        assertThat(r.stdout()).isEqualTo("hello $HOME *\n");
        assertThat(r.stderr()).isEmpty();
        assertThat(r.exitCode()).isZero();
        assertThat(r.endReason()).isEqualTo(EndReason.EXITED);
        assertThat(r.succeeded()).isTrue();
        assertThat(r.timedOut()).isFalse();
        assertThat(r.truncated()).isFalse();
    }

    @Test
    void execHonoursCwdAndEnv() {
        shared.files().mkdir("/workspace/sub");
        ExecResult r = shared.exec(Exec.command("sh", "-c", "pwd; echo $COLOUR").cwd("/workspace/sub").env("COLOUR", "teal"));
        assertThat(r.stdout()).isEqualTo("/workspace/sub\nteal\n");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            PYTHON     | import sys; print('python', 6 * 7); print('err', file=sys.stderr)
            JAVASCRIPT | console.log('javascript', 6 * 7); console.error('err')
            BASH       | echo bash $((6 * 7)); echo err >&2
            """)
    void runsCodeInEachLanguage(Language language, String code) {
        ExecResult r = shared.run(language, code);
        assertThat(r.stdout()).isEqualTo(language.id() + " 42\n");
        assertThat(r.stderr()).isEqualTo("err\n");
        assertThat(r.succeeded()).isTrue();
    }

    @Test
    void stdinReachesTheProcess() {
        ExecResult text = shared.exec(Exec.command("tr", "a-z", "A-Z").stdin("shout, please"));
        assertThat(text.stdout()).isEqualTo("SHOUT, PLEASE");
        byte[] binary = {0, 1, 2, (byte) 0xff, (byte) 0xfe, 10};
        ExecResult bytes = shared.exec(Exec.command("od", "-An", "-tx1").stdin(binary));
        assertThat(bytes.stdout().trim()).isEqualTo("00 01 02 ff fe 0a");
        ExecResult code = shared.exec(Exec.code(Language.PYTHON, "import sys; print(sum(int(x) for x in sys.stdin))").stdin("1\n2\n39\n"));
        assertThat(code.stdout()).isEqualTo("42\n");
    }

    @ParameterizedTest(name = "exit {0}")
    @ValueSource(ints = {0, 1, 3, 42, 255})
    void exitCodeIsTheProgramsOwnAndNotAnError(int code) {
        ExecResult r = shared.exec("sh", "-c", "echo before; exit " + code);
        assertThat(r.exitCode()).isEqualTo(code);
        assertThat(r.endReason()).isEqualTo(EndReason.EXITED);
        assertThat(r.stdout()).isEqualTo("before\n");
        assertThat(r.succeeded()).isEqualTo(code == 0);
    }

    @Test
    void missingProgramIsStartFailedWith127() {
        ExecResult r = shared.exec("/no/such/program");
        assertThat(r.exitCode()).isEqualTo(127);
        assertThat(r.endReason()).isEqualTo(EndReason.START_FAILED);
    }

    @Test
    void timeoutKillsTheProcessAndKeepsTheOutputItWroteBefore() {
        ExecResult r = shared.exec(Exec.command("sh", "-c", "echo begun; echo also >&2; sleep 60; echo never").timeout(Duration.ofSeconds(1)));
        assertThat(r.timedOut()).isTrue();
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.stdout()).isEqualTo("begun\n");
        assertThat(r.stderr()).isEqualTo("also\n");
        assertThat(r.succeeded()).isFalse();
        // The sandbox is fine afterwards.
        assertThat(shared.exec("echo", "next").stdout()).isEqualTo("next\n");
    }

    @Test
    void sandboxTimeoutLimitAppliesWhenTheExecutionGivesNone() {
        try (RemoteSandbox s = live.client.create(SandboxSpec.builder().timeout(Duration.ofSeconds(1)).build())) {
            ExecResult r = s.exec("sh", "-c", "echo started; sleep 60");
            assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
            assertThat(r.stdout()).isEqualTo("started\n");
        }
    }

    @Test
    void outputOverTheSandboxsOutputLimitIsTruncated() {
        try (RemoteSandbox s = live.client.create(SandboxSpec.builder().outputLimit("4k").build())) {
            ExecResult r = s.run(Language.PYTHON, "import sys\nfor i in range(2000): print('line %04d' % i)\nprint('small', file=sys.stderr)");
            assertThat(r.truncated()).isTrue();
            assertThat(r.stdout().length()).isLessThanOrEqualTo(4096).isGreaterThan(0);
            assertThat(r.stdout()).startsWith("line 0000\nline 0001\n");
            assertThat(r.stderr()).isEqualTo("small\n");
        }
    }

    @Test
    void outputUnderTheLimitIsNotTruncated() {
        try (RemoteSandbox s = live.client.create(SandboxSpec.builder().outputLimit("4k").build())) {
            ExecResult r = s.run(Language.PYTHON, "print('x' * 4000)");
            assertThat(r.truncated()).isFalse();
            assertThat(r.stdout()).isEqualTo("x".repeat(4000) + "\n");
        }
    }

    @Test
    void codeWithoutALanguageUsesTheSandboxsDefaultLanguage() {
        var created = live.raw("POST", "/v1/sandboxes", "{\"language\": \"javascript\"}");
        assertThat(created.statusCode()).isEqualTo(201);
        assertThat(created.body()).contains("\"language\":\"javascript\"");
        String id = created.body().replaceAll(".*\"id\":\"([^\"]+)\".*", "$1");
        try {
            var r = live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"code\": \"console.log(6 * 7)\"}");
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("\"stdout\":\"42\\n\"");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    @Test
    void codeWithoutALanguageInASandboxWithoutDefaultIsRefused() {
        var r = live.raw("POST", "/v1/sandboxes/" + shared.id() + "/exec", "{\"code\": \"print(1)\"}");
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("'code' needs a 'language'");
    }
}
