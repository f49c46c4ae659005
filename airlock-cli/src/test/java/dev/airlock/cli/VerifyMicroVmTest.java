package dev.airlock.cli;

import dev.airlock.microvm.MicroVmDriverConfig;
import dev.airlock.microvm.MicroVmLeakCheck;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock verify --runtime microvm}: the cases and recovery scenarios run against QEMU
 * guests, one of each way a case runs and the scenarios that look for the guest's host processes
 * (each case boots guests under software emulation here, so the whole catalogue, about 15 minutes,
 * is left to a manual run: {@code bin/airlock verify --runtime microvm}).
 *
 * <p>In the full lane ({@code bin/test --full}): the fast lane runs {@code airlock verify} on runc, and the
 * microVM contract's smoke cases.
 */
@Tag("full")
class VerifyMicroVmTest {

    /** A run, two runs, an outlive (one-shot and execution), and the scenarios that kill the engine and the guest's QEMU. */
    private static final Set<String> CASES = Set.of("priv-capabilities", "cleanup-data-for-next-run", "cleanup-outlive-run",
            "limit-timeout-setsid-escape", "recovery-killed-engine", "recovery-killed-agent");

    @AfterAll
    static void nothingOfAnyGuestRemains() {
        assertThat(MicroVmLeakCheck.findAll(MicroVmDriverConfig.defaults().stateRoot())).isEmpty();
    }

    @Test
    void theControlsHoldInGuestsAndVerifyExitsZero() throws Exception {
        List<String> args = new ArrayList<>(List.of("--runtime", "microvm", "--case"));
        args.addAll(CASES);
        VerifyTestSupport.Report report = VerifyTestSupport.verify(Duration.ofMinutes(10), args.toArray(String[]::new));

        assertThat(report.withStatus("held")).as("stderr:\n%s", report.stderr()).isEqualTo(new TreeSet<>(CASES));
        assertThat(report.exitCode()).isZero();
        assertThat(report.json().get("runtime").asString()).isEqualTo("microvm");
        // The host never sees a guest's processes: what outlives a run is looked for inside, and judged by its QEMU's end.
        assertThat(report.finding("cleanup-outlive-run").get("happened").asString())
                .contains("left in the sandbox after it").contains("no host process of its QEMU guest remains");
        assertThat(report.finding("limit-timeout-setsid-escape").get("happened").asString())
                .contains("ended timed_out").contains("no process 'sleep ").contains("in the sandbox");
        assertThat(report.finding("recovery-killed-agent").get("happened").asString())
                .contains("the sandbox's QEMU").contains("ended agent_killed").contains("nothing is left behind");
        assertThat(report.finding("recovery-killed-engine").get("happened").asString())
                .contains("every process of the sandbox died with it").contains("state of instance");
    }

    @Test
    void weakeningsAreForContainerTiersAndSayWhatToGive() throws Exception {
        CliProcess cli = CliProcess.run("verify", "--runtime", "microvm", "--unsafe", "--unsafe-disable", "seccomp");
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).contains("--unsafe-disable").contains("microvm").contains("OCI --runtime");
    }
}
