package dev.airlock.core;

import dev.airlock.core.NetworkPolicy.Destination;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;
import java.util.Set;

import static dev.airlock.core.Refusals.invalid;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Inputs, credentials, secrets and request approvals: the records an operator's policy is made of. */
class PolicyRecordsTest {

    private static final List<Destination> GITHUB = List.of(Destination.of("api.github.com", 443));

    @Test
    void anInputNameCannotLeaveTheInputsDirectory() {
        assertThat(new Input("data.v2_x-y", Path.of("/srv/data")).sandboxPath()).isEqualTo("/inputs/data.v2_x-y");
        invalid(() -> new Input("..", Path.of("/srv")), "input name '..' is not valid: use letters, digits, '.', '_' and '-'");
        invalid(() -> new Input(".hidden", Path.of("/srv")), "input name '.hidden' is not valid");
        invalid(() -> new Input("a/../../etc", Path.of("/srv")), "input name 'a/../../etc' is not valid");
        invalid(() -> new Input("x".repeat(64), Path.of("/srv")), "is not valid");
        invalid(() -> new Input(null, Path.of("/srv")), "input name 'null' is not valid");
        invalid(() -> new Input("a\u001b[1m", Path.of("/srv")), "input name 'a?[1m' is not valid");
    }

    @Test
    void anInputsHostPathMustBeAbsoluteAndIsNormalized() {
        invalid(() -> new Input("data", Path.of("srv/data")), "input 'data': the host path must be absolute, got srv/data");
        invalid(() -> new Input("data", null), "the host path must be absolute, got null");
        assertThat(new Input("data", Path.of("/srv/x/../data/.")).hostPath()).isEqualTo(Path.of("/srv/data"));
    }

    @Test
    void aSecretNeverPrintsAndCannotSplitAHeader() {
        Secret s = new Secret("Bearer ghp_123");
        assertThat(s.toString()).isEqualTo("Secret[redacted]").doesNotContain("ghp_");
        assertThat(s.reveal()).isEqualTo("Bearer ghp_123");
        invalid(() -> new Secret("x\r\nX-Injected: 1"), "a secret's value must be non-empty and contain no line break or NUL byte");
        invalid(() -> new Secret("x\ny"), "no line break");
        invalid(() -> new Secret("x\0"), "NUL byte");
        invalid(() -> new Secret(""), "non-empty");
        assertThatThrownBy(() -> new Secret(null)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void aCredentialIsBoundToNamedDestinationsAndAValidHeader() {
        Credential c = new Credential("github", GITHUB, "Authorization", new Secret("Bearer t"));
        assertThat(c.toString()).doesNotContain("Bearer t");
        invalid(() -> new Credential("github", List.of(), "Authorization", new Secret("t")), "credential 'github' is bound to no destination: name at least one");
        invalid(() -> new Credential("github", null, "Authorization", new Secret("t")), "is bound to no destination");
        invalid(() -> new Credential("github", GITHUB, "Authorization", null), "credential 'github' has no value");
    }

    @Test
    void aCredentialNameOrHeaderOutsideItsAlphabetIsRefusedAndEchoedPrintable() {
        invalid(() -> new Credential("GitHub", GITHUB, "Authorization", new Secret("t")), "credential name 'GitHub' is not valid: use a-z, 0-9, _ and -");
        invalid(() -> new Credential("-x", GITHUB, "Authorization", new Secret("t")), "credential name '-x' is not valid");
        invalid(() -> new Credential("gh", GITHUB, "Authorization: x\r\nHost", new Secret("t")),
                "credential 'gh': header 'Authorization: x??Host' is not a valid header name");
        invalid(() -> new Credential("gh", GITHUB, "", new Secret("t")), "header '' is not a valid header name");
        invalid(() -> new Credential("gh", GITHUB, "X".repeat(65), new Secret("t")), "is not a valid header name");
    }

    @Test
    void aRequestApprovalNamesDestinationsAndHttpMethods() {
        RequestApproval a = new RequestApproval(List.of(Destination.of("*.pay.example", 443)), Set.of("post", "DELETE"));
        assertThat(a.methods()).containsExactlyInAnyOrder("POST", "DELETE");
        invalid(() -> new RequestApproval(List.of(), Set.of("POST")), "a request approval names no destination: name at least one");
        invalid(() -> new RequestApproval(GITHUB, Set.of()), "a request approval names no method: name at least one, such as POST");
        invalid(() -> new RequestApproval(GITHUB, Set.of("PO ST")), "'PO ST' is not an HTTP method");
        invalid(() -> new RequestApproval(GITHUB, Set.of("GET\r\nX")), "'GET??X' is not an HTTP method");
        invalid(() -> new RequestApproval(GITHUB, Set.of("A".repeat(17))), "is not an HTTP method");
    }

    @Test
    void aRequestApprovalCoversItsMethodsOnItsDestinationsOnly() {
        RequestApproval a = new RequestApproval(List.of(Destination.of("*.pay.example", 443)), Set.of("POST"));
        assertThat(a.covers("post", "API.pay.example", 443)).isTrue();
        assertThat(a.covers("GET", "api.pay.example", 443)).isFalse();
        assertThat(a.covers("POST", "api.pay.example", 80)).isFalse();
        assertThat(a.covers("POST", "pay.example", 443)).as("the apex is not a subdomain").isFalse();
        assertThat(a.inspects("api.pay.example", 443)).isTrue();
        assertThat(a.inspects("api.pay.example", 8443)).isFalse();
        RequestApproval anyPort = new RequestApproval(List.of(Destination.of("pay.example")), Set.of("PUT"));
        assertThat(anyPort.covers("PUT", "pay.example", 12345)).isTrue();
    }

    @Test
    void aOneShotRunNeedsALanguageAndBoundedCode() {
        invalid(() -> new RunRequest(null, "print(1)", null, null), "language is missing: choose one of python, javascript");
        invalid(() -> new RunRequest(Language.PYTHON, null, null, null), "code is missing: give the program text to run");
        String tooLong = "\u00e9".repeat(RunRequest.MAX_CODE_BYTES / 2 + 1);
        Refusals.refused(AirlockException.Kind.LIMIT_EXCEEDED, () -> RunRequest.of(Language.PYTHON, tooLong),
                "code is larger than 1000000 bytes: split the program");
        RunRequest r = RunRequest.of(Language.SH, "true");
        assertThat(r.stdin()).isEmpty();
        assertThat(r.spec()).isEqualTo(SandboxSpec.defaults());
    }
}
