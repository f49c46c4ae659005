package dev.airlock.it;

import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.EndReason;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.ForbiddenException;
import dev.airlock.client.RemoteSandbox;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Long-lived work (a server behind a preview port, a terminal) is bounded by its sandbox's
 * lifetime, not by the timeout meant for one execution: on a profile whose executions get 2 s, a
 * background process runs past them, while an execution run to its end is still stopped at 2 s.
 */
class BackgroundLifetimeTest {

    private static LiveServer live;
    private static RemoteSandbox sandbox;

    @BeforeAll
    static void start() {
        live = LiveServer.withPolicy("""
                profiles:
                  default: {limits: {timeoutSeconds: 2}, maxLifetimeSeconds: 600}
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
                """, c -> c.withPoolSize(0));
        sandbox = live.client.create();
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close(); // fails if any sandbox left anything on the host
        }
    }

    @Test
    void aBackgroundProcessOutlivesTheExecutionTimeout() {
        BackgroundProcess server = sandbox.start(Exec.command("sh", "-c", "sleep 5; echo still-serving"));
        ExecResult r = server.waitFor(Duration.ofSeconds(60)).orElseThrow();

        assertThat(r.endReason()).as(r.message()).isEqualTo(EndReason.EXITED);
        assertThat(r.exitCode()).isZero();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        server.stdout(out);
        assertThat(out.toString(StandardCharsets.UTF_8)).isEqualTo("still-serving\n");
    }

    @Test
    void anExecutionRunToItsEndIsStillStoppedAtItsTimeout() {
        ExecResult r = sandbox.exec("sleep", "5");
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.timedOut()).isTrue();
    }

    @Test
    void aBackgroundProcessMayAskForLessButNotForMoreThanItsSandboxMayLive() {
        BackgroundProcess short_ = sandbox.start(Exec.command("sleep", "30").timeout(Duration.ofSeconds(1)));
        assertThat(short_.waitFor(Duration.ofSeconds(30)).orElseThrow().endReason()).isEqualTo(EndReason.TIMED_OUT);

        assertThatThrownBy(() -> sandbox.start(Exec.command("sleep", "1").timeout(Duration.ofSeconds(601))))
                .isInstanceOf(ForbiddenException.class)
                .hasMessageContaining("rule profiles.default.maxLifetimeSeconds");
    }
}
