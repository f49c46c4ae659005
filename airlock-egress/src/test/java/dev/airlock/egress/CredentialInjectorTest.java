package dev.airlock.egress;

import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.RequestApproval;
import dev.airlock.core.Secret;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The credential injector on its own: which credentials a request gets, where, and what it never gets them for. */
class CredentialInjectorTest {

    static final String SECRET = "s3cr3t-token";
    static Interception interception;
    static CredentialInjector injector;

    @BeforeAll
    static void create() throws Exception {
        interception = Interception.create("sb-inject", List.of(
                        new Credential("github", List.of(Destination.of("api.test.example", 443)), "Authorization", new Secret("Bearer " + SECRET)),
                        new Credential("shadow", List.of(Destination.of("api.test.example")), "authorization", new Secret("never-sent")),
                        new Credential("key", List.of(Destination.of("*.test.example")), "X-Api-Key", new Secret("k3y"))),
                List.of(new RequestApproval(List.of(Destination.of("gated.example")), Set.of("DELETE"))), null);
        injector = new CredentialInjector(interception);
    }

    @AfterAll
    static void close() {
        interception.close();
    }

    static HttpHead head(String raw) throws Exception {
        ByteArrayInputStream in = new ByteArrayInputStream(raw.getBytes(StandardCharsets.ISO_8859_1));
        return HttpHead.read(in::read, 32 * 1024);
    }

    static String sent(CredentialInjector.Bound bound, HttpHead head, String host, int port, boolean tls) throws Exception {
        return new String(bound.request(head, head.tunnelTarget(), new HttpHead.Authority(host, port), tls), StandardCharsets.ISO_8859_1);
    }

    @Test
    void theBoundCredentialReplacesTheSandboxsHeaderOfTheSameNameWhateverItsCase() throws Exception {
        HttpHead head = head("GET /user HTTP/1.1\r\nHost: api.test.example\r\nauthorization: Bearer stolen-elsewhere\r\n"
                + "AUTHORIZATION: Basic x\r\n\r\n");
        CredentialInjector.Bound bound = injector.bind(head, "api.test.example", 443);
        assertThat(bound.names()).containsExactly("github", "key");
        String sent = sent(bound, head, "api.test.example", 443, true);
        assertThat(sent).contains("Authorization: Bearer " + SECRET + "\r\n").contains("X-Api-Key: k3y\r\n")
                .doesNotContain("stolen-elsewhere").doesNotContain("Basic x").doesNotContain("never-sent")
                .endsWith("Connection: close\r\n\r\n");
        assertThat(sent.toLowerCase().split("authorization:", -1)).hasSize(2);
    }

    @Test
    void anotherPortAnotherHostOrAnIpLiteralGetsNoCredential() throws Exception {
        HttpHead head = head("GET / HTTP/1.1\r\n\r\n");
        // Off the bound port the other credential of that header is the first to fill it: still one Authorization.
        assertThat(injector.bind(head, "api.test.example", 8443).names()).containsExactly("shadow", "key");
        assertThat(injector.bind(head, "test.example", 443).names()).isEmpty();
        assertThat(injector.bind(head, "api.test.example.evil.example", 443).names()).isEmpty();
        assertThat(injector.bind(head, "127.0.0.1", 443).names()).isEmpty();
        assertThat(sent(injector.bind(head, "gated.example", 443), head, "gated.example", 443, true)).doesNotContain(SECRET);
    }

    @Test
    void traceAndTrackWhichWouldEchoTheSecretAreRefusedWith405() throws Exception {
        for (String method : List.of("TRACE", "trace", "TRACK")) {
            HttpHead head = head(method + " / HTTP/1.1\r\n\r\n");
            assertThatThrownBy(() -> injector.bind(head, "api.test.example", 443)).isInstanceOfSatisfying(EgressRefusal.class, r -> {
                assertThat(r.httpStatus).isEqualTo(405);
                assertThat(r.rule).isEqualTo(CredentialInjector.TRACE_REFUSED);
                assertThat(r.getMessage()).doesNotContain(SECRET);
            });
        }
    }

    @Test
    void traceWhereNoCredentialIsBoundIsNotTheInjectorsToRefuse() throws Exception {
        assertThat(injector.bind(head("TRACE / HTTP/1.1\r\n\r\n"), "gated.example", 443).credentials()).isEmpty();
    }

    @Test
    void hopByHopAndProxyHeadersNeverCarryAnythingUpstream() throws Exception {
        HttpHead head = head("GET / HTTP/1.1\r\nConnection: X-Leak, keep-alive\r\nX-Leak: 1\r\nProxy-Authorization: Basic p\r\n"
                + "Proxy-Foo: 2\r\nKeep-Alive: 5\r\nTE: trailers\r\n\r\n");
        String sent = sent(injector.bind(head, "api.test.example", 443), head, "api.test.example", 443, true);
        assertThat(sent).doesNotContain("X-Leak").doesNotContainIgnoringCase("proxy-").doesNotContain("Keep-Alive").doesNotContain("TE:")
                .contains("Host: api.test.example\r\n");
    }
}
