package dev.airlock.client;

import org.junit.jupiter.api.Test;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Values that can never be valid are refused at construction, before anything is sent. */
class ValidationTest {

    @Test
    void aNegativeTimeoutIsRefusedWithItsName() {
        assertThatThrownBy(() -> SandboxSpec.builder().timeout(Duration.ofSeconds(-1)).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("timeout PT-1S must be positive");
        assertThatThrownBy(() -> Exec.command("ls").timeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("timeout PT0S must be positive");
    }

    @Test
    void aSizeMustLookLikeASize() {
        assertThatThrownBy(() -> SandboxSpec.builder().memory("lots").build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("memory 'lots' is not a size");
        assertThat(SandboxSpec.builder().memory("256M").disk("1g").outputLimit("1048576").fileSize("1.5g").build().limits())
                .isEqualTo(new Limits("256m", null, null, null, "1048576", "1.5g", null, "1g"));
    }

    @Test
    void ttlIsAtLeastASecondAndAtMostADay() {
        assertThatThrownBy(() -> SandboxSpec.builder().ttl(Duration.ofHours(25)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 24 h");
        assertThatThrownBy(() -> SandboxSpec.builder().ttl(Duration.ofMillis(10)).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one second");
    }

    @Test
    void limitsMustBePositive() {
        assertThatThrownBy(() -> SandboxSpec.builder().pids(0).build()).hasMessageContaining("pids 0 must be positive");
        assertThatThrownBy(() -> SandboxSpec.builder().cpus(Double.NaN).build()).hasMessageContaining("cpus NaN");
        assertThatThrownBy(() -> SandboxSpec.builder().openFiles(-1).build()).hasMessageContaining("openFiles -1");
    }

    @Test
    void environmentNamesAndLabelKeysAreChecked() {
        assertThatThrownBy(() -> SandboxSpec.builder().env("1BAD", "x").build()).hasMessageContaining("'1BAD' is not valid");
        assertThatThrownBy(() -> Exec.command("ls").env("A=B", "x")).hasMessageContaining("'A=B' is not valid");
        assertThatThrownBy(() -> SandboxSpec.builder().label("a=b", "x").build()).hasMessageContaining("no '='");
    }

    @Test
    void anExecIsEitherACommandOrCode() {
        assertThatThrownBy(() -> Exec.command(List.of())).hasMessageContaining("command is empty");
        assertThatThrownBy(() -> new Exec(List.of("ls"), Language.PYTHON, "x", null, null, null, null)).hasMessageContaining("not both");
        assertThatThrownBy(() -> new Exec(null, null, null, null, null, null, null)).hasMessageContaining("give a command");
        assertThatThrownBy(() -> Exec.command("ls").cwd("relative")).hasMessageContaining("must be an absolute path");
    }

    @Test
    void specsAndExecsAreImmutable() {
        Map<String, String> env = new java.util.HashMap<>(Map.of("A", "1"));
        Exec base = Exec.command("env").env(env);
        env.put("B", "2");
        Exec derived = base.env("C", "3");
        byte[] stdin = {1, 2};
        Exec withStdin = base.stdin(stdin);
        stdin[0] = 9;
        withStdin.stdin()[1] = 9;

        assertThat(base.env()).containsOnlyKeys("A");
        assertThat(derived.env()).containsOnlyKeys("A", "C");
        assertThat(withStdin.stdin()).containsExactly(1, 2);
        assertThat(withStdin).isEqualTo(base.stdin(new byte[] {1, 2}));
    }

    @Test
    void theClientNeedsAnHttpUrlAndAPrintableToken() {
        assertThatThrownBy(() -> Airlock.connect(URI.create("ftp://h"), "t")).hasMessageContaining("not an http(s) URL");
        assertThatThrownBy(() -> Airlock.connect(URI.create("http://h:1"), " ")).hasMessageContaining("token is missing");
        assertThatThrownBy(() -> Airlock.connect(URI.create("http://h:1"), "a\r\nX-Evil: 1"))
                .hasMessageContaining("cannot go in an HTTP header")
                .hasMessageNotContaining("X-Evil");
    }
}
