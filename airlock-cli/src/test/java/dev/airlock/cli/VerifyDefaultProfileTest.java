package dev.airlock.cli;

import dev.airlock.cli.verify.Catalogue;
import dev.airlock.cli.verify.VerifyCase;
import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code airlock verify} against the sandboxes this host really gives: every control holds. */
class VerifyDefaultProfileTest {

    @AfterAll
    static void nothingOfAnySandboxRemains() {
        assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty();
    }

    @Test
    void builtInCatalogueCoversEveryControlAndEveryRecoveryScenario() {
        List<VerifyCase> cases = Catalogue.builtIn();
        assertThat(cases).hasSizeGreaterThanOrEqualTo(35);
        assertThat(cases.stream().map(VerifyCase::control).collect(Collectors.toSet())).containsExactlyInAnyOrder(
                "filesystem", "pid-namespace", "privileges", "syscall-filter", "network-namespace", "limits", "cleanup", "cross-sandbox", "recovery");
        assertThat(cases.stream().filter(c -> c.kind() == VerifyCase.Kind.RECOVERY).map(VerifyCase::scenario).collect(Collectors.toSet()))
                .isEqualTo(Set.of("killed-engine", "killed-agent", "agent-flood", "disk-full", "output-tree", "egress-flood"));
        assertThat(cases.stream().map(VerifyCase::kind).collect(Collectors.toSet())).containsExactlyInAnyOrder(VerifyCase.Kind.values());
    }

    @Test
    void everyControlHoldsAndVerifyExitsZero() throws Exception {
        VerifyTestSupport.Report report = VerifyTestSupport.verify();
        assertThat(report.withStatus("held")).as("stderr:\n%s", report.stderr()).isEqualTo(VerifyTestSupport.builtInNames());
        assertThat(report.exitCode()).isZero();
        assertThat(report.json().get("profile").asString()).isEqualTo("default");
        assertThat(report.json().get("broken").asInt()).isZero();
        assertThat(report.json().get("errors").asInt()).isZero();
        // Each finding names its control, what was tried and what happened.
        report.json().get("findings").forEach(f -> {
            assertThat(f.get("control").asString()).isNotBlank();
            assertThat(f.get("tried").asString()).isNotBlank();
            assertThat(f.get("happened").asString()).isNotBlank();
            assertThat(f.has("remedy")).as("a held control needs no change").isFalse();
        });
        assertThat(report.finding("recovery-killed-engine").get("happened").asString())
                .contains("every process of the sandbox died with it").contains("reaped: container al-");
        assertThat(report.finding("recovery-disk-full").get("happened").asString()).contains("No space left on device");
        assertThat(report.finding("recovery-killed-agent").get("happened").asString()).contains("ended agent_killed");
        assertThat(report.finding("recovery-agent-flood").get("happened").asString()).contains("ended timed_out").contains("kept 1048576 bytes");
        assertThat(report.finding("limit-timeout-setsid-escape").get("happened").asString())
                .contains("which lives on): ended timed_out").contains("no process 'sleep ");
        assertThat(report.finding("recovery-output-tree").get("happened").asString())
                .contains("processes were dead within 3 s").contains("entries: the walk stopped at 10000 entries");
        assertThat(report.finding("recovery-egress-flood").get("happened").asString()).contains("the audit chain verifies");
    }

    @Test
    void outputTreeScenarioHoldsAgainstARealServer() throws Exception {
        VerifyTestSupport.Report report = VerifyTestSupport.verify("--case", "recovery-output-tree");
        assertThat(report.exitCode()).as("stderr:\n%s", report.stderr()).isZero();
        assertThat(report.finding("recovery-output-tree").get("happened").asString())
                .contains("processes were dead within 3 s").contains("entries: the walk stopped at 10000 entries");
    }

    /**
     * The egress refusal flood against a real server: held, and the finding shows the flood was
     * large, every attempt refused, and the few records' counts adding up to the attempts.
     */
    @Test
    void egressRefusalFloodAddsABoundedNumberOfRecordsToARealServersAuditLog() throws Exception {
        VerifyTestSupport.Report report = VerifyTestSupport.verify("--case", "recovery-egress-flood");
        assertThat(report.exitCode()).as("stderr:\n%s", report.stderr()).isZero();
        String happened = report.finding("recovery-egress-flood").get("happened").asString();
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("tried (\\d+) connections .* (\\d+) refused with 403.*after shutdown (\\d+)"
                + " egress record\\(s\\): (\\d+) in full and (\\d+) counted").matcher(happened);
        assertThat(m.find()).as(happened).isTrue();
        long attempts = Long.parseLong(m.group(1));
        assertThat(attempts).isGreaterThanOrEqualTo(1000);
        assertThat(Long.parseLong(m.group(2))).isEqualTo(attempts);
        assertThat(Long.parseLong(m.group(3))).isBetween(1L, 2L);
        assertThat(Long.parseLong(m.group(4)) + Long.parseLong(m.group(5))).isEqualTo(attempts);
        assertThat(happened).contains("the audit chain verifies");
    }

    @Test
    void textOutputHasAProgressLinePerCaseAndASummary() throws Exception {
        CliProcess cli = CliProcess.run("verify", "--case", "fs-read-host-shadow", "syscall-ptrace", "limit-fork-bomb");
        assertThat(cli.exitCode()).as(cli.stdout() + cli.stderr()).isZero();
        assertThat(cli.stdout()).containsPattern("\\[1/3] held +fs-read-host-shadow +filesystem")
                .containsPattern("\\[2/3] held +limit-fork-bomb +limits")
                .containsPattern("\\[3/3] held +syscall-ptrace +syscall-filter")
                .contains("3 cases: 3 held, 0 broken, 0 could not be run");
    }

    @Test
    void unknownCaseNameIsRefusedWithTheKnownNames() throws Exception {
        CliProcess cli = CliProcess.run("verify", "--case", "no-such-case");
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).contains("no case named 'no-such-case'").contains("syscall-ptrace");
    }
}
