package dev.airlock.cli;

import dev.airlock.core.Engine;
import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** {@code airlock run} as a user runs it: a real CLI process, real sandboxes. */
class RunCommandTest {

    private static final OciDriverConfig CONFIG = OciDriverConfig.defaults();

    @AfterEach
    void nothingOfAnySandboxRemains() {
        assertThat(new LeakCheck(CONFIG).findOfEndedEngines()).isEmpty();
    }

    @Test
    void printsTheProgramsOutputAndExitsWithItsExitCode() throws Exception {
        CliProcess cli = CliProcess.run("run", "--lang", "python", "--code",
                "import sys; print('to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)");
        assertThat(cli.exitCode()).isEqualTo(3);
        assertThat(cli.stdout()).isEqualTo("to stdout\n");
        assertThat(cli.stderr()).isEqualTo("to stderr\n");
    }

    /** The default image has no display and none of the host's /etc but what it takes: matplotlib draws to files. */
    @Test
    void matplotlibDrawsAChart() throws Exception {
        CliProcess cli = CliProcess.run("run", "--lang", "python", "--code", "import io, matplotlib.pyplot as plt;"
                + " plt.plot([1, 2]); b = io.BytesIO(); plt.savefig(b, format='png'); print(plt.get_backend(), b.getvalue()[:8].hex())");
        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        assertThat(cli.stdout()).isEqualToIgnoringCase("agg 89504e470d0a1a0a\n");
        assertThat(cli.stderr()).isEmpty();
    }

    @Test
    void runsAProgramFromAFileWithStdin(@TempDir Path dir) throws Exception {
        Path program = dir.resolve("upper.js");
        Files.writeString(program, "process.stdin.on('data', d => process.stdout.write(d.toString().toUpperCase()));");
        CliProcess cli = CliProcess.run("run", "--lang", "javascript", "--file", program.toString(), "--stdin", "shout");
        assertThat(cli.exitCode()).isZero();
        assertThat(cli.stdout()).isEqualTo("SHOUT");
    }

    @Test
    void jsonCarriesTheWholeResult() throws Exception {
        CliProcess cli = CliProcess.run("run", "--lang", "bash", "--json", "--code", "echo out; echo err >&2; exit 4");
        assertThat(cli.exitCode()).isEqualTo(4);
        JsonNode json = JsonMapper.builder().build().readTree(cli.stdout());
        assertThat(json.get("stdout").asString()).isEqualTo("out\n");
        assertThat(json.get("stderr").asString()).isEqualTo("err\n");
        assertThat(json.get("exitCode").asInt()).isEqualTo(4);
        assertThat(json.get("timedOut").asBoolean()).isFalse();
        assertThat(json.get("oomKilled").asBoolean()).isFalse();
        assertThat(json.get("truncated").asBoolean()).isFalse();
        assertThat(json.get("durationMs").isIntegralNumber()).isTrue();
        assertThat(json.get("sandboxId").asString()).matches("al-[a-z0-9]+-[0-9a-f]{16}");
    }

    @Test
    void timeoutEndsTheRunWith124AndSaysSo() throws Exception {
        CliProcess cli = CliProcess.run("run", "--lang", "sh", "--timeout", "0.5", "--code", "echo begun; sleep 60");
        assertThat(cli.exitCode()).isEqualTo(124);
        assertThat(cli.stdout()).isEqualTo("begun\n");
        assertThat(cli.stderr()).isEqualTo("airlock: timed out after 500ms and was killed\n");
    }

    @Test
    void memoryLimitEndsWithOomKilled() throws Exception {
        CliProcess cli = CliProcess.run("run", "--lang", "python", "--memory", "48m", "--json", "--code",
                "x = bytearray(400 * 1024 * 1024)");
        JsonNode json = JsonMapper.builder().build().readTree(cli.stdout());
        assertThat(json.get("oomKilled").asBoolean()).isTrue();
        assertThat(json.get("exitCode").asInt()).isEqualTo(137);
        assertThat(cli.exitCode()).isEqualTo(137);
    }

    @Test
    void unknownLanguageIsOneClearSentence() throws Exception {
        CliProcess cli = CliProcess.run("run", "--lang", "cobol", "--code", "DISPLAY 'HI'.");
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).isEqualTo("airlock: unknown language 'cobol': choose one of python, javascript, bash, sh, java\n");
        assertThat(cli.stdout()).isEmpty();
    }

    @Test
    void missingFileIsOneClearSentence() throws Exception {
        CliProcess cli = CliProcess.run("run", "--lang", "python", "--file", "/nonexistent/prog.py");
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).isEqualTo("airlock: file /nonexistent/prog.py does not exist: give the path of the program to run\n");
    }

    @Test
    void absurdLimitsAreRefusedWithTheRange() throws Exception {
        CliProcess negative = CliProcess.run("run", "--lang", "sh", "--code", "true", "--pids", "-5");
        assertThat(negative.exitCode()).isEqualTo(2);
        assertThat(negative.stderr()).isEqualTo("airlock: pids -5 is out of range: give 8 to 32768\n");
        CliProcess huge = CliProcess.run("run", "--lang", "sh", "--code", "true", "--memory", "5000g");
        assertThat(huge.exitCode()).isEqualTo(2);
        assertThat(huge.stderr()).isEqualTo("airlock: memory 5000g is out of range: give 16m to 64g\n");
        CliProcess garbage = CliProcess.run("run", "--lang", "sh", "--code", "true", "--memory", "lots");
        assertThat(garbage.exitCode()).isEqualTo(2);
        assertThat(garbage.stderr()).startsWith("airlock: memory 'lots' is not a size");
    }

    @Test
    void runtimeNotInstalledSaysWhatToDo() throws Exception {
        // An absolute path that cannot exist, so the test holds on a host that has every runtime.
        CliProcess cli = CliProcess.run("run", "--lang", "sh", "--code", "true", "--runtime", "/nonexistent/airlock-test/runsc");
        assertThat(cli.exitCode()).isEqualTo(3);
        assertThat(cli.stderr()).startsWith("airlock: OCI runtime '/nonexistent/airlock-test/runsc' is not installed: install it");
    }

    @Test
    void codeAndFileTogetherAreRefused() throws Exception {
        CliProcess cli = CliProcess.run("run", "--lang", "sh", "--code", "true", "--file", "/etc/hostname");
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).contains("--code=CODE, --file=PATH are mutually exclusive");
    }

    @Test
    void interruptingTheCliKillsTheSandboxAndLeavesNothing() throws Exception {
        // a timeout of 600 s, so that the run's own timeout (30 s by default) is not what ends it
        CliProcess cli = CliProcess.start("run", "--lang", "sh", "--code", "echo running; sleep 1000", "--timeout", "600");
        await().atMost(Duration.ofSeconds(30)).until(() -> cli.stdout().contains("running"));
        String signal = cli.interrupt();
        assertThat(cli.await()).as("the CLI's exit after SIG" + signal).isEqualTo(signal.equals("INT") ? 130 : 143);
        // The shutdown hook destroyed the sandbox: nothing needs reaping (checked after each test).
    }

    @Test
    void killedCliTakesItsSandboxProcessesWithItAndTheNextStartReapsTheRest() throws Exception {
        CliProcess cli = CliProcess.start("run", "--lang", "sh", "--code", "echo running; sleep 1000 & sleep 1000");
        await().atMost(Duration.ofSeconds(30)).until(() -> cli.stdout().contains("running"));
        cli.process.destroyForcibly();
        cli.await();
        // With the host side gone, the agent kills every process of the sandbox and exits.
        await().atMost(Duration.ofSeconds(30)).until(() -> new LeakCheck(CONFIG).findOfEndedEngines().stream().noneMatch(l -> l.startsWith("process:")));
        // Runtime state and directories remain until the next engine starts and reaps them.
        try (Engine next = new Engine(new OciDriver(CONFIG))) {
            assertThat(next.reapedAtStart()).anyMatch(line -> line.startsWith("container al-"));
        }
    }
}
