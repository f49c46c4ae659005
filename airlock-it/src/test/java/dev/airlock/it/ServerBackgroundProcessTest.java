package dev.airlock.it;

import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.EndReason;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.RemoteSandbox;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Processes started with {@code "background": true}: listed, signalled, killed, timed out. */
class ServerBackgroundProcessTest {

    private static LiveServer live;
    private static RemoteSandbox sandbox;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(1));
        sandbox = live.client.create();
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    private static ExecResult ended(BackgroundProcess p) {
        Optional<ExecResult> r = p.waitFor(Duration.ofSeconds(30));
        assertThat(r).as("process %s ended", p.id()).isPresent();
        return r.get();
    }

    @Test
    void runningProcessIsListedAndSigtermEndsItAsSignaled143() {
        BackgroundProcess p = sandbox.start(Exec.command("sleep", "100"));
        assertThat(p.id()).matches("p-\\d+");
        assertThat(p.isRunning()).isTrue();
        assertThat(p.state()).isEqualTo("running");
        assertThat(p.command()).containsExactly("sleep", "100");
        assertThat(sandbox.processes()).filteredOn(q -> q.id().equals(p.id()))
                .singleElement().satisfies(q -> {
                    assertThat(q.isRunning()).isTrue();
                    assertThat(q.state()).isEqualTo("running");
                });
        assertThat(sandbox.process(p.id()).isRunning()).isTrue();

        p.signal(15);
        ExecResult r = ended(p);
        assertThat(r.endReason()).isEqualTo(EndReason.SIGNALED);
        assertThat(r.exitCode()).isEqualTo(143);
        assertThat(p.isRunning()).isFalse();
        assertThat(sandbox.processes()).filteredOn(q -> q.id().equals(p.id()))
                .singleElement().satisfies(q -> assertThat(q.isRunning()).isFalse());
    }

    @Test
    void killEndsTheProcessAndWhatItStarted() {
        BackgroundProcess p = sandbox.start(Exec.command("sh", "-c", "sleep 100 & sleep 100 & echo started; wait"));
        p.kill();
        ExecResult r = ended(p);
        assertThat(r.endReason()).isEqualTo(EndReason.SIGNALED);
        assertThat(r.exitCode()).isEqualTo(137);
        // SIGKILL ended everything the process started: no sleep is left in the sandbox.
        ExecResult ps = sandbox.exec("sh", "-c", "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done");
        assertThat(ps.stdout()).doesNotContain("sleep 100");
    }

    @Test
    void backgroundProcessWithAShortTimeoutEndsTimedOutByItself() {
        BackgroundProcess p = sandbox.start(Exec.command("sh", "-c", "echo begun; sleep 100").timeout(Duration.ofSeconds(1)));
        ExecResult r = ended(p);
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.timedOut()).isTrue();
        assertThat(r.stdout()).isEqualTo("begun\n");
    }

    @Test
    void backgroundProcessThatExitsKeepsItsResult() {
        BackgroundProcess p = sandbox.start(Exec.command("sh", "-c", "echo done; echo oops >&2; exit 7"));
        ExecResult r = ended(p);
        assertThat(r.endReason()).isEqualTo(EndReason.EXITED);
        assertThat(r.exitCode()).isEqualTo(7);
        assertThat(r.stdout()).isEqualTo("done\n");
        assertThat(r.stderr()).isEqualTo("oops\n");
        assertThat(sandbox.process(p.id()).result()).contains(r);
    }

    @Test
    void unknownProcessIsNotFound() {
        assertThatThrownBy(() -> sandbox.process("p-999999")).isInstanceOf(NotFoundException.class).hasMessageContaining("p-999999");
    }

    @Test
    void moreThanSixtyFourRunningBackgroundProcessesIsQuotaExceeded() {
        try (RemoteSandbox busy = live.client.create(dev.airlock.client.SandboxSpec.builder().label("busy", "yes").build())) {
            java.util.List<BackgroundProcess> started = new java.util.ArrayList<>();
            for (int i = 0; i < 64; i++) {
                started.add(busy.start(Exec.command("sleep", "100")));
            }
            assertThatThrownBy(() -> busy.start(Exec.command("sleep", "100")))
                    .isInstanceOf(dev.airlock.client.QuotaExceededException.class).hasMessageContaining("64");
            started.getFirst().kill();
            assertThat(started.getFirst().waitFor(Duration.ofSeconds(30))).isPresent();
            BackgroundProcess one = busy.start(Exec.command("sleep", "100"));
            assertThat(one.isRunning()).as("room for one again").isTrue();
        }
    }
}
