package dev.airlock.cli;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock verify --runtime runsc}: every built-in case, attacks and recovery scenarios,
 * holds under gVisor too (judged by a case's gVisor expectation where it has one, which the
 * finding says), and verify exits 0. bin/test installs runsc.
 *
 * <p>In the full lane ({@code bin/test --full}): the fast lane runs {@code airlock verify} on runc, and the
 * gVisor contract's smoke cases.
 */
@Tag("full")
class VerifyGvisorTest {

    @AfterAll
    static void nothingOfAnySandboxRemains() {
        assertThat(new LeakCheck(OciDriverConfig.defaults().withRuntime("runsc")).findOfEndedEngines()).isEmpty();
    }

    @Test
    void everyControlHoldsUnderGvisorAndVerifyExitsZero() throws Exception {
        VerifyTestSupport.Report report = VerifyTestSupport.verify(Duration.ofMinutes(12), "--runtime", "runsc");
        assertThat(report.withStatus("held")).as("stderr:\n%s", report.stderr()).isEqualTo(VerifyTestSupport.builtInNames());
        assertThat(report.exitCode()).isZero();
        // An execution's timeout ends what it started in other sessions, seen from inside the sandbox that lives on.
        assertThat(report.finding("limit-timeout-setsid-escape").get("happened").asString())
                .contains("ended timed_out").contains("no process 'sleep ").contains("in the sandbox");
        // The host sees the Sentry, never its tasks: what outlives a one-shot run is judged by the Sentry's end.
        assertThat(report.finding("cleanup-outlive-run").get("happened").asString())
                .contains("no host process of its gVisor kernel remains");
        assertThat(report.finding("recovery-killed-agent").get("happened").asString())
                .contains("gVisor kernel").contains("ended agent_killed");
        assertThat(report.finding("recovery-egress-flood").get("happened").asString()).contains("the audit chain verifies");
    }
}
