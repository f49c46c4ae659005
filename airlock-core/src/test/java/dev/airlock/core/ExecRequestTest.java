package dev.airlock.core;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.airlock.core.Refusals.invalid;
import static dev.airlock.core.Refusals.refused;
import static org.assertj.core.api.Assertions.assertThat;

/** One process to start: what a client may ask for, and what is refused before it reaches a sandbox. */
class ExecRequestTest {

    @Test
    void anEmptyCommandIsRefusedSayingWhatToGive() {
        invalid(() -> new ExecRequest(null, null, null, null, null), "command is empty: give the program to run and its arguments");
        invalid(() -> new ExecRequest(List.of(), null, null, null, null), "command is empty");
        invalid(() -> ExecRequest.of("", "-c", "true"), "command is empty");
    }

    @Test
    void aNulByteInAnArgumentIsRefusedBecauseExecWouldCutIt() {
        invalid(() -> ExecRequest.of("sh", "-c", "echo safe\0; rm -rf /"), "command argument contains a NUL byte");
    }

    @Test
    void unsetFieldsTakeTheirDefaults() {
        ExecRequest r = new ExecRequest(List.of("true"), null, null, null, null);
        assertThat(r.cwd()).isEqualTo(ExecRequest.DEFAULT_CWD);
        assertThat(r.env()).isEmpty();
        assertThat(r.stdin()).isEmpty();
        assertThat(r.timeout()).isNull();
        assertThat(r.withCwd("").cwd()).isEqualTo("/workspace");
    }

    @Test
    void aRelativeWorkingDirectoryIsRefusedAndEchoedPrintable() {
        invalid(() -> ExecRequest.of("true").withCwd("workspace"),
                "working directory 'workspace' must be an absolute path inside the sandbox");
        invalid(() -> ExecRequest.of("true").withCwd("../\u001b[31m\r\nforged"), "working directory '../?[31m??forged'");
        invalid(() -> ExecRequest.of("true").withCwd("/tmp\0/x"), "working directory '/tmp?/x' must be an absolute path");
    }

    @Test
    void stdinOverItsLimitIsALimitRefusalThatSaysWhatToDoInstead() {
        byte[] tooMuch = new byte[ExecRequest.MAX_STDIN_BYTES + 1];
        refused(AirlockException.Kind.LIMIT_EXCEEDED, () -> ExecRequest.of("cat").withStdin(tooMuch),
                "stdin is 16777217 bytes, over the limit of 16777216", "write large inputs as files instead");
        assertThat(ExecRequest.of("cat").withStdin(new byte[ExecRequest.MAX_STDIN_BYTES]).stdin()).hasSize(ExecRequest.MAX_STDIN_BYTES);
    }

    @Test
    void aTimeoutMustBePositive() {
        invalid(() -> ExecRequest.of("true").withTimeout(Duration.ZERO), "timeout must be positive");
        invalid(() -> ExecRequest.of("true").withTimeout(Duration.ofMillis(-1)), "timeout must be positive");
        assertThat(ExecRequest.of("true").withTimeout(Duration.ofNanos(1)).timeout()).isEqualTo(Duration.ofNanos(1));
    }

    @Test
    void environmentNamesAndValuesAreCheckedLikeTheSandboxes() {
        invalid(() -> ExecRequest.of("env").withEnv(Map.of("1ST", "x")), "environment variable name '1ST' is not valid");
        invalid(() -> ExecRequest.of("env").withEnv(Map.of("LD_PRELOAD=/x.so A", "x")), "name 'LD_PRELOAD=/x.so A' is not valid");
        invalid(() -> ExecRequest.of("env").withEnv(Map.of("A", "x\0y")), "environment variable A contains a NUL byte");
    }

    @Test
    void theRequestKeepsNoReferenceToTheCallersLists() {
        List<String> argv = new ArrayList<>(List.of("echo", "one"));
        Map<String, String> env = new HashMap<>(Map.of("A", "1"));
        ExecRequest r = new ExecRequest(argv, env, null, null, null);
        argv.set(0, "rm");
        env.put("B", "2");
        assertThat(r.argv()).containsExactly("echo", "one");
        assertThat(r.env()).containsOnlyKeys("A");
    }

    @Test
    void aNullArgumentIsRefusedNamingItsPosition() {
        java.util.List<String> argv = new java.util.ArrayList<>(java.util.List.of("echo", "a"));
        argv.add(null);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ExecRequest(argv, null, null, null, null))
                .isInstanceOf(AirlockException.class).hasMessageContaining("command argument 2 is null");
    }
}
