package dev.airlock.cli;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock verify --runtime airlock}: every built-in case, attacks and recovery scenarios,
 * holds on the container tier started by Airlock's own runtime (airlock-launch) as it does under
 * runc, and verify exits 0.
 *
 * <p>In the full lane ({@code bin/test --full}): the fast lane runs {@code airlock verify} on runc, and the
 * launcher's contract smoke cases.
 */
@Tag("full")
class VerifyLauncherTest {

    @AfterAll
    static void nothingOfAnySandboxRemains() {
        assertThat(new LeakCheck(OciDriverConfig.defaults().withRuntime("airlock")).findOfEndedEngines()).isEmpty();
    }

    @Test
    void everyControlHoldsUnderAirlocksOwnRuntimeAndVerifyExitsZero() throws Exception {
        VerifyTestSupport.Report report = VerifyTestSupport.verify(Duration.ofMinutes(10), "--runtime", "airlock");
        assertThat(report.withStatus("held")).as("stderr:\n%s", report.stderr()).isEqualTo(VerifyTestSupport.builtInNames());
        assertThat(report.exitCode()).isZero();
    }
}
