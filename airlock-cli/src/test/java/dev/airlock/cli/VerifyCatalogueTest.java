package dev.airlock.cli;

import dev.airlock.cli.verify.Catalogue;
import dev.airlock.core.AirlockException;
import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** An operator's own case files: run next to the built-in ones, parsed strictly. */
class VerifyCatalogueTest {

    private static final String CUSTOM = """
            {
              "name": "my-no-ssh-keys",
              "control": "filesystem",
              "description": "Look for the host's SSH keys.",
              "remedy": "Do not bind /root or /etc/ssh into sandboxes.",
              "language": "sh",
              "code": ["ls /root/.ssh /etc/ssh 2>&1 | wc -l", "echo done"],
              "expect": {"endReason": "exited", "exitCode": 0, "stdoutRegex": "2\\\\s*\\ndone\\n"}
            }
            """;

    @AfterAll
    static void nothingOfAnySandboxRemains() {
        assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty();
    }

    @Test
    void aUserCaseIsRunNextToTheBuiltInOnes(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("my-no-ssh-keys.json"), CUSTOM);
        VerifyTestSupport.Report report = VerifyTestSupport.verify("--catalogue", dir.toString(), "--case", "my-no-ssh-keys", "fs-read-host-shadow");
        assertThat(report.statuses()).as(report.stderr()).containsExactly(
                java.util.Map.entry("fs-read-host-shadow", "held"), java.util.Map.entry("my-no-ssh-keys", "held"));
        assertThat(report.exitCode()).isZero();
        assertThat(report.finding("my-no-ssh-keys").get("source").asString()).isEqualTo(dir.resolve("my-no-ssh-keys.json").toString());
    }

    /** A user case whose expectation the sandbox does not meet is reported broken, with its remedy, and verify exits 1. */
    @Test
    void aUserCaseThatFailsIsReportedBroken(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("my-expects-root.json"), """
                {"name": "my-expects-root", "control": "privileges", "description": "Expect to be root (deliberately wrong).",
                 "remedy": "Nothing: this case is wrong on purpose.", "language": "sh", "code": "id -u",
                 "expect": {"stdout": "0\\n"}}
                """);
        CliProcess cli = CliProcess.run("verify", "--catalogue", dir.toString(), "--case", "my-expects-root");
        assertThat(cli.exitCode()).as(cli.stdout() + cli.stderr()).isEqualTo(1);
        assertThat(cli.stdout()).containsPattern("\\[1/1] broken +my-expects-root +privileges")
                .contains("stdout differs: expected \"0\\n\"")
                .contains("stdout \"1000\\n\"")
                .contains("change:   Nothing: this case is wrong on purpose.")
                .contains("1 cases: 0 held, 1 broken");
    }

    @Test
    void malformedCaseFileIsAClearErrorNamingFileAndField(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("my-bad.json");
        Files.writeString(file, CUSTOM.replace("my-no-ssh-keys", "my-bad").replace("\"endReason\": \"exited\"", "\"endReason\": \"finished\""));
        CliProcess cli = CliProcess.run("verify", "--catalogue", dir.toString());
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).isEqualTo("airlock: case file " + file + ": field 'expect.endReason' 'finished' is not an end reason: "
                + "use one of [exited, signaled, timed_out, oom_killed, cancelled, start_failed, agent_killed]\n");
        assertThat(cli.stdout()).isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            not JSON                | {"name": "x"                                                     | is not valid JSON
            not an object           | []                                                               | must hold one JSON object
            unknown field           | {"name": "c", "colour": "red"}                                   | field 'colour' is not a known field
            missing control         | {"name": "c"}                                                    | field 'control' is missing
            unknown control         | {"name": "c", "control": "vibes"}                                | field 'control' 'vibes' is not a control
            name not the file name  | {"name": "other"}                                                | field 'name' 'other' does not match the file name c.json
            bad language            | BASE, "language": "cobol", "code": "x", "expect": {"exitCode": 0}} | field 'language'
            code of wrong type      | BASE, "language": "sh", "code": 42, "expect": {"exitCode": 0}}  | field 'code' must be a string or an array of strings
            missing expect          | BASE, "language": "sh", "code": "true"}                          | field 'expect' is missing
            empty expect            | BASE, "language": "sh", "code": "true", "expect": {}}            | field 'expect' is empty
            unknown expect field    | BASE, "language": "sh", "code": "true", "expect": {"stdot": ""}} | field 'expect.stdot' is not a known field
            exit code not a number  | BASE, "language": "sh", "code": "true", "expect": {"exitCode": "0"}} | field 'expect.exitCode' must be a whole number
            bad regex               | BASE, "language": "sh", "code": "true", "expect": {"stdoutRegex": "("}} | field 'expect.stdoutRegex' is not a valid regular expression
            limit out of range      | BASE, "language": "sh", "code": "true", "limits": {"memory": "1k"}, "expect": {"exitCode": 0}} | field 'limits.memory' memory 1k is out of range
            bad size                | BASE, "language": "sh", "code": "true", "limits": {"disk": "lots"}, "expect": {"exitCode": 0}} | field 'limits.disk'
            unknown limit           | BASE, "language": "sh", "code": "true", "limits": {"ram": "1g"}, "expect": {"exitCode": 0}} | field 'limits.ram' is not a known field
            two-runs without setup  | BASE, "kind": "two-runs", "language": "sh", "code": "true", "expect": {"exitCode": 0}} | field 'setup' is missing
            outlive without marker  | BASE, "kind": "outlive", "language": "sh", "code": "true", "expect": {"exitCode": 0}} | field 'marker' is missing
            unknown kind            | BASE, "kind": "twice", "language": "sh", "code": "true", "expect": {"exitCode": 0}} | field 'kind' 'twice' is not a kind
            prelude with sh         | BASE, "prelude": true, "language": "sh", "code": "true", "expect": {"exitCode": 0}} | field 'prelude' the prelude is Python
            duplicate field         | BASE, "language": "sh", "language": "sh", "code": "true", "expect": {"exitCode": 0}} | Duplicate
            unknown scenario        | BASE, "kind": "recovery", "scenario": "reboot"}                  | field 'scenario' 'reboot' is not a recovery scenario
            recovery with code      | BASE, "kind": "recovery", "scenario": "disk-full", "code": "x"}  | field 'code' is not used by a recovery case
            """)
    void malformedCaseFilesAreRefused(String what, String text, String message, @TempDir Path dir) throws Exception {
        String json = text.replace("BASE,", "{\"name\": \"c\", \"control\": \"limits\", \"description\": \"d\", \"remedy\": \"r\",");
        Path file = dir.resolve("c.json");
        Files.writeString(file, json);
        assertThatThrownBy(() -> Catalogue.directory(dir)).as(what).isInstanceOf(AirlockException.class)
                .hasMessageStartingWith("case file " + file)
                .hasMessageContaining(message);
    }

    @Test
    void aUserCaseMayNotReuseABuiltInName(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("syscall-ptrace.json"), CUSTOM.replace("my-no-ssh-keys", "syscall-ptrace"));
        CliProcess cli = CliProcess.run("verify", "--catalogue", dir.toString());
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).contains("field 'name' 'syscall-ptrace' is already used by built-in:syscall-ptrace.json");
    }

    @Test
    void anEmptyOrMissingCatalogueDirectoryIsRefused(@TempDir Path dir) throws Exception {
        assertThatThrownBy(() -> Catalogue.directory(dir)).hasMessage("catalogue " + dir + " holds no case file (*.json)");
        assertThatThrownBy(() -> Catalogue.directory(dir.resolve("nope"))).hasMessageContaining("is not a directory");
    }
}
