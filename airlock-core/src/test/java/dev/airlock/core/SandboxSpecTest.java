package dev.airlock.core;

import dev.airlock.core.NetworkPolicy.Destination;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.airlock.core.Refusals.invalid;
import static org.assertj.core.api.Assertions.assertThat;

/** What a sandbox is made of: defaults for what is left out, and refusals for what cannot be right. */
class SandboxSpecTest {

    @Test
    void whatIsLeftOutTakesTheSafeDefault() {
        SandboxSpec s = new SandboxSpec(null, null, null, null, null, null, null);
        assertThat(s.image()).isEqualTo(SandboxSpec.SYSTEM_IMAGE);
        assertThat(s.limits()).isEqualTo(Limits.DEFAULTS);
        assertThat(s.network()).isEqualTo(NetworkPolicy.NONE);
        assertThat(s.env()).isEmpty();
        assertThat(s.inputs()).isEmpty();
        assertThat(s.credentials()).isEmpty();
        assertThat(s.requestApprovals()).isEmpty();
        assertThat(new SandboxSpec(" ", null, null).image()).isEqualTo("system");
        assertThat(SandboxSpec.defaults()).isEqualTo(s);
    }

    @Test
    void environmentNamesAreShellIdentifiersOfBoundedLength() {
        assertThat(SandboxSpec.defaults().withEnv(Map.of("_A1", "", "PATH", "/bin")).env()).containsOnlyKeys("_A1", "PATH");
        assertThat(SandboxSpec.defaults().withEnv(Map.of("A".repeat(128), "x")).env()).hasSize(1);
        invalid(() -> SandboxSpec.defaults().withEnv(Map.of("A".repeat(129), "x")), "is not valid: use letters, digits and _, not starting with a digit");
        invalid(() -> SandboxSpec.defaults().withEnv(Map.of("", "x")), "environment variable name '' is not valid");
        invalid(() -> SandboxSpec.defaults().withEnv(Map.of("9LIVES", "x")), "name '9LIVES' is not valid");
        invalid(() -> SandboxSpec.defaults().withEnv(Map.of("A-B", "x")), "name 'A-B' is not valid");
    }

    @Test
    void aHostileEnvironmentNameIsEchoedPrintableAndShort() {
        invalid(() -> SandboxSpec.defaults().withEnv(Map.of("X\n\u001b]0;pwned\u0007" + "Y".repeat(5000), "v")),
                "environment variable name 'X??]0;pwned?YYY", "...' is not valid");
    }

    @Test
    void aNulByteInAnEnvironmentValueIsRefusedNamingTheVariable() {
        invalid(() -> SandboxSpec.defaults().withEnv(Map.of("TOKEN", "abc\0def")), "environment variable TOKEN contains a NUL byte");
    }

    @Test
    void twoInputsOrCredentialsOfOneNameAreRefused() {
        Input a = new Input("data", Path.of("/srv/a"));
        Input b = new Input("data", Path.of("/srv/b"));
        invalid(() -> SandboxSpec.defaults().withInputs(List.of(a, b)), "two inputs have the same name: each input needs its own name");
        Credential c = new Credential("gh", List.of(Destination.of("api.github.com")), "Authorization", new Secret("Bearer x"));
        invalid(() -> SandboxSpec.defaults().withCredentials(List.of(c, c)), "two credentials have the same name");
    }

    @Test
    void theSpecKeepsNoReferenceToTheCallersCollections() {
        Map<String, String> env = new HashMap<>(Map.of("A", "1"));
        SandboxSpec s = SandboxSpec.defaults().withEnv(env);
        env.put("LD_PRELOAD", "/tmp/x.so");
        assertThat(s.env()).containsOnlyKeys("A");
    }

    @Test
    void eachWitherChangesOnlyItsPart() {
        RequestApproval approval = new RequestApproval(List.of(Destination.of("pay.example")), Set.of("POST"));
        SandboxSpec s = SandboxSpec.defaults().withRequestApprovals(List.of(approval)).withLimits(Limits.DEFAULTS.withPids(9));
        assertThat(s.requestApprovals()).containsExactly(approval);
        assertThat(s.limits().pids()).isEqualTo(9);
        assertThat(s.image()).isEqualTo("system");
        assertThat(s.withNetwork(null).network()).isEqualTo(NetworkPolicy.NONE);
    }
}
