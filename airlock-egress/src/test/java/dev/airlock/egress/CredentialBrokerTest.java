package dev.airlock.egress;

import dev.airlock.core.Credential;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.Secret;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The credential broker inside the proxy, against recording origins on 127.0.0.1 that keep every
 * byte they receive: the secret goes to the bound, verified host only, exactly once per request,
 * and nowhere else (not other hosts, records, or the proxy's own answers).
 */
class CredentialBrokerTest {

    static final String SECRET = "Bearer s3cr3t-9f1c2e7a-do-not-leak";

    @TempDir
    static Path tmp;
    static TestTls tls;
    static RecordingServer https;
    static RecordingServer http;

    final List<EgressProxy> proxies = new ArrayList<>();
    final List<TcpBridge> bridges = new ArrayList<>();
    final List<EgressRecord> records = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startServers() throws Exception {
        tls = TestTls.create(tmp, "test.example", "other.example");
        https = new RecordingServer(tls.serverContext());
        http = new RecordingServer(null);
    }

    @AfterAll
    static void stopServers() throws IOException {
        https.close();
        http.close();
    }

    @AfterEach
    void stopProxiesAndCheckRecords() throws IOException {
        for (EgressProxy p : proxies) {
            p.close();
        }
        for (TcpBridge b : bridges) {
            b.close();
        }
        // Whatever happened in the test, no record carries the value.
        assertThat(records).allSatisfy(r -> assertThat(r.toString()).doesNotContain("s3cr3t"));
    }

    static NetworkPolicy policy() {
        return NetworkPolicy.of(List.of(Destination.of("test.example"), Destination.of("other.example"), Destination.of("wrong.example")),
                List.of(), List.of(new AddressRange("127.0.0.0/8")),
                Map.of("test.example", List.of("127.0.0.1"), "other.example", List.of("127.0.0.1"), "wrong.example", List.of("127.0.0.1")));
    }

    static Credential credential(String name, String host) {
        return credential(name, host, SECRET);
    }

    /** Tests that look for a value's absence use one of their own: the origins are shared. */
    static Credential credential(String name, String host, String value) {
        return new Credential(name, List.of(Destination.of(host)), "Authorization", new Secret(value));
    }

    /** A proxy whose upstream trust is the test CA (or the JVM's default when {@code upstream} is null). */
    TcpBridge start(List<Credential> credentials, SSLContext upstream) throws IOException {
        Path socket = Files.createTempDirectory(tmp, "p").resolve("egress.sock");
        EgressProxy proxy = EgressProxy.start("sb-cred", socket, new EgressRules(policy(), Set.of(), HostResolver.NONE), records::add,
                EgressProxy.Options.DEFAULTS.withUpstreamTls(upstream), credentials);
        proxies.add(proxy);
        TcpBridge bridge = new TcpBridge(socket);
        bridges.add(bridge);
        return bridge;
    }

    TcpBridge start(List<Credential> credentials) throws Exception {
        return start(credentials, tls.clientContext());
    }

    EgressProxy proxy() {
        return proxies.getLast();
    }

    /** A client that trusts exactly {@code ca}. */
    static SSLContext trusting(X509Certificate ca) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setCertificateEntry("ca", ca);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    /** CONNECTs through the proxy, then TLS to {@code host} trusting {@code trust}, verifying the name. */
    static SSLSocket tunnel(TcpBridge bridge, String host, int port, SSLContext trust, String... alpn) throws IOException {
        Socket s = bridge.connect();
        String answer = EgressProxyTest.connect(s, host + ":" + port, "Host: " + host + ":" + port);
        assertThat(answer).startsWith("HTTP/1.1 200");
        SSLSocket t = (SSLSocket) trust.getSocketFactory().createSocket(s, host, port, true);
        SSLParameters p = t.getSSLParameters();
        p.setEndpointIdentificationAlgorithm("HTTPS");
        if (alpn.length > 0) {
            p.setApplicationProtocols(alpn);
        }
        t.setSSLParameters(p);
        t.startHandshake();
        return t;
    }

    static String exchange(Socket s, String request) throws IOException {
        s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
        s.getOutputStream().flush();
        return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
    }

    /** What the origin received on the connection whose request line has {@code path}. */
    static String receivedFor(RecordingServer server, String path) {
        await().atMost(Duration.ofSeconds(10)).until(() -> server.received.stream().anyMatch(r -> r.contains(" " + path + " ")));
        return server.received.stream().filter(r -> r.contains(" " + path + " ")).findFirst().orElseThrow();
    }

    static int count(String haystack, String regex) {
        Matcher m = Pattern.compile(regex, Pattern.CASE_INSENSITIVE | Pattern.MULTILINE).matcher(haystack);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    @Test
    void httpsToTheBoundHostGetsTheHeaderOnceAndTheRecordNamesTheCredential() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        String response;
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            response = exchange(t, "GET /tls-bound HTTP/1.1\r\nHost: test.example:" + https.port() + "\r\nX-Keep: 1\r\n\r\n");
        }
        assertThat(response).startsWith("HTTP/1.1 200").contains("seen GET /tls-bound").doesNotContain("s3cr3t");
        String got = receivedFor(https, "/tls-bound");
        assertThat(count(got, "^Authorization: ")).isEqualTo(1);
        assertThat(got).contains("Authorization: " + SECRET + "\r\n", "X-Keep: 1\r\n", "Connection: close\r\n");
        await().atMost(Duration.ofSeconds(5)).until(() -> !records.isEmpty());
        EgressRecord r = records.getFirst();
        assertThat(r.protocol()).isEqualTo("http-connect");
        assertThat(r.allowed()).isTrue();
        assertThat(r.credentials()).containsExactly("api");
    }

    @Test
    void plainHttpToTheBoundHostGetsTheHeader() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        String host = "test.example:" + http.port();
        String response;
        try (Socket s = bridge.connect()) {
            response = exchange(s, "GET http://" + host + "/plain-bound HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
        }
        assertThat(response).startsWith("HTTP/1.1 200").contains("seen GET /plain-bound").doesNotContain("s3cr3t");
        String got = receivedFor(http, "/plain-bound");
        assertThat(got).startsWith("GET /plain-bound HTTP/1.1\r\n").contains("Authorization: " + SECRET + "\r\n");
        await().atMost(Duration.ofSeconds(5)).until(() -> !records.isEmpty());
        assertThat(records.getFirst().protocol()).isEqualTo("http-forward");
        assertThat(records.getFirst().credentials()).containsExactly("api");
        try (Socket s = bridge.connect()) {
            response = exchange(s, "POST http://" + host + "/plain-post HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 7\r\n\r\npayload"
                    + "GET http://" + host + "/plain-second HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
        }
        assertThat(response).contains("seen POST /plain-post");
        assertThat(receivedFor(http, "/plain-post")).contains("Authorization: " + SECRET + "\r\n").endsWith("\r\n\r\npayload");
        assertThat(http.all()).doesNotContain("/plain-second");
    }

    @Test
    void anotherAllowedHostGetsNoSecretAndItsTunnelIsNotIntercepted() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        // The tunnel to other.example is the origin's own TLS: only the test CA verifies it.
        try (SSLSocket t = tunnel(bridge, "other.example", https.port(), tls.clientContext())) {
            X509Certificate leaf = (X509Certificate) t.getSession().getPeerCertificates()[0];
            assertThat(leaf.getIssuerX500Principal()).isNotEqualTo(proxy().certificateAuthority().getSubjectX500Principal());
            assertThat(exchange(t, "GET /tls-other HTTP/1.1\r\nHost: other.example\r\nAuthorization: mine\r\n\r\n")).contains("seen GET /tls-other");
        }
        String host = "other.example:" + http.port();
        try (Socket s = bridge.connect()) {
            assertThat(exchange(s, "GET http://" + host + "/plain-other HTTP/1.1\r\nHost: " + host + "\r\n\r\n")).contains("seen GET /plain-other");
        }
        assertThat(receivedFor(https, "/tls-other")).doesNotContain("s3cr3t").contains("Authorization: mine");
        assertThat(receivedFor(http, "/plain-other")).doesNotContain("s3cr3t").doesNotContain("Authorization");
        await().atMost(Duration.ofSeconds(5)).until(() -> records.size() >= 2);
        assertThat(records).allSatisfy(r -> assertThat(r.credentials()).isEmpty());
    }

    @Test
    void aHeaderOfTheSameNameFromTheSandboxIsReplacedNotDuplicated() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            exchange(t, "GET /replace HTTP/1.1\r\nHost: test.example\r\nauthorization: Bearer forged-by-sandbox\r\n"
                    + "AUTHORIZATION: Basic Zm9v\r\nConnection: Authorization\r\n\r\n");
        }
        String got = receivedFor(https, "/replace");
        assertThat(count(got, "^authorization:")).isEqualTo(1);
        assertThat(got).contains("Authorization: " + SECRET + "\r\n").doesNotContain("forged-by-sandbox", "Zm9v");
        String host = "test.example:" + http.port();
        try (Socket s = bridge.connect()) {
            exchange(s, "GET http://" + host + "/replace-plain HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: forged\r\n\r\n");
        }
        String plain = receivedFor(http, "/replace-plain");
        assertThat(count(plain, "^authorization:")).isEqualTo(1);
        assertThat(plain).contains("Authorization: " + SECRET + "\r\n").doesNotContain("forged");
    }

    @Test
    void aSecondRequestOnAnInterceptedConnectionNeverReachesUpstream() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        String response;
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            response = exchange(t, "POST /first HTTP/1.1\r\nHost: test.example\r\nContent-Length: 5\r\n\r\nhello"
                    + "GET /second HTTP/1.1\r\nHost: test.example\r\n\r\n"
                    + "GET /third HTTP/1.1\r\nHost: other.example\r\n\r\n");
        }
        assertThat(response).contains("seen POST /first").doesNotContain("/second");
        String got = receivedFor(https, "/first");
        assertThat(got).endsWith("\r\n\r\nhello").doesNotContain("/second", "/third");
        assertThat(count(https.all(), "^GET /second")).isZero();
    }

    @Test
    void aChunkedBodyIsForwardedWholeAndAmbiguousFramingIsRefused() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            String response = exchange(t, "PUT /chunked HTTP/1.1\r\nHost: test.example\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: test.example\r\n\r\n");
            assertThat(response).contains("seen PUT /chunked");
        }
        assertThat(receivedFor(https, "/chunked")).endsWith("5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n");
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            String response = exchange(t, "POST /both HTTP/1.1\r\nHost: test.example\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "0\r\n\r\n");
            assertThat(response).startsWith("HTTP/1.1 400");
        }
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            assertThat(exchange(t, "GET http://other.example/absolute HTTP/1.1\r\nHost: other.example\r\n\r\n")).startsWith("HTTP/1.1 400");
        }
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            assertThat(exchange(t, "GET /mixed HTTP/1.1\r\nHost: other.example\r\n\r\n")).startsWith("HTTP/1.1 400").contains("differs");
        }
        Thread.sleep(300);
        assertThat(https.all()).doesNotContain("/smuggled", "/both", "/absolute", "/mixed");
    }

    @Test
    void traceWhichWouldEchoTheSecretBackIsRefused() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            assertThat(exchange(t, "TRACE /trace-tls HTTP/1.1\r\nHost: test.example\r\n\r\n")).startsWith("HTTP/1.1 405");
        }
        String host = "test.example:" + http.port();
        try (Socket s = bridge.connect()) {
            assertThat(exchange(s, "TRACE http://" + host + "/trace-plain HTTP/1.1\r\nHost: " + host + "\r\n\r\n")).startsWith("HTTP/1.1 405");
        }
        Thread.sleep(300);
        assertThat(https.all() + http.all()).doesNotContain("/trace-tls", "/trace-plain");
    }

    @Test
    void anUntrustedUpstreamIsRefusedAndGetsNoSecret() throws Exception {
        // The JVM's default trust does not know the test CA.
        TcpBridge bridge = start(List.of(credential("api", "test.example", "Bearer s3cr3t-untrusted")), null);
        int before = https.received.size();
        String response;
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trusting(proxy().certificateAuthority()))) {
            response = exchange(t, "GET /untrusted HTTP/1.1\r\nHost: test.example\r\n\r\n");
        }
        assertThat(response).startsWith("HTTP/1.1 502").contains("failed verification").doesNotContain("s3cr3t");
        await().atMost(Duration.ofSeconds(5)).until(() -> https.received.size() > before);
        assertThat(https.all()).doesNotContain("s3cr3t-untrusted", "/untrusted");
        await().atMost(Duration.ofSeconds(5)).until(() -> !records.isEmpty());
        assertThat(records.getFirst().credentials()).isEmpty();
        assertThat(records.getFirst().rule()).contains("failed verification");
    }

    @Test
    void anUpstreamWhoseCertificateIsForAnotherNameIsRefusedAndGetsNoSecret() throws Exception {
        // wrong.example reaches the same origin, whose certificate names test.example and other.example only.
        TcpBridge bridge = start(List.of(credential("api", "wrong.example", "Bearer s3cr3t-wrong-name")));
        int before = https.received.size();
        String response;
        try (SSLSocket t = tunnel(bridge, "wrong.example", https.port(), trusting(proxy().certificateAuthority()))) {
            response = exchange(t, "GET /wrong-name HTTP/1.1\r\nHost: wrong.example\r\n\r\n");
        }
        assertThat(response).startsWith("HTTP/1.1 502").contains("failed verification").doesNotContain("s3cr3t");
        await().atMost(Duration.ofSeconds(5)).until(() -> https.received.size() > before);
        assertThat(https.all()).doesNotContain("s3cr3t-wrong-name", "/wrong-name");
    }

    @Test
    void theLeafChainsToThisSandboxsCaAndNamesTheConnectTarget() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "*.example")));
        X509Certificate ca = proxy().certificateAuthority();
        X509Certificate fromPem = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(
                new ByteArrayInputStream(proxy().certificateAuthorityPem().orElseThrow().getBytes(StandardCharsets.US_ASCII)));
        assertThat(fromPem).isEqualTo(ca);
        assertThat(ca.getBasicConstraints()).isZero();
        assertThat(proxy().certificateAuthorityPem().orElseThrow()).doesNotContain("PRIVATE");
        // The client's SNI names another host: the leaf still names the CONNECT target.
        try (Socket s = bridge.connect()) {
            assertThat(EgressProxyTest.connect(s, "other.example:" + https.port())).startsWith("HTTP/1.1 200");
            SSLSocket t = (SSLSocket) trusting(ca).getSocketFactory().createSocket(s, "test.example", https.port(), true);
            t.startHandshake();
            X509Certificate[] chain = java.util.Arrays.stream(t.getSession().getPeerCertificates()).map(c -> (X509Certificate) c)
                    .toArray(X509Certificate[]::new);
            chain[0].verify(ca.getPublicKey());
            assertThat(chain[0].getSubjectAlternativeNames().stream().map(n -> String.valueOf(n.get(1))).toList()).containsExactly("other.example");
            assertThat(chain[0].getBasicConstraints()).isEqualTo(-1);
            assertThat(t.getSession().getProtocol()).isEqualTo("TLSv1.3");
            t.close();
        }
        assertThat(proxy().certificateAuthority().getSubjectX500Principal().getName()).contains("sb-cred");
    }

    @Test
    void twoProxiesHaveDifferentCasAndOnesClientCannotBeFooledByTheOther() throws Exception {
        TcpBridge first = start(List.of(credential("api", "test.example")));
        X509Certificate firstCa = proxy().certificateAuthority();
        TcpBridge second = start(List.of(credential("api", "test.example")));
        X509Certificate secondCa = proxy().certificateAuthority();
        assertThat(firstCa.getPublicKey()).isNotEqualTo(secondCa.getPublicKey());
        assertThat(firstCa).isNotEqualTo(secondCa);
        assertThatThrownBy(() -> tunnel(second, "test.example", https.port(), trusting(firstCa)).close())
                .isInstanceOf(SSLHandshakeException.class);
        tunnel(first, "test.example", https.port(), trusting(firstCa)).close();
    }

    @Test
    void onlyHttp11IsOfferedToTheSandbox() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        SSLContext trust = trusting(proxy().certificateAuthority());
        try (SSLSocket t = tunnel(bridge, "test.example", https.port(), trust, "h2", "http/1.1")) {
            assertThat(t.getApplicationProtocol()).isEqualTo("http/1.1");
        }
        assertThatThrownBy(() -> tunnel(bridge, "test.example", https.port(), trust, "h2").close()).isInstanceOf(IOException.class);
    }

    @Test
    void socks5ToTheBoundHostIsInterceptedToo() throws Exception {
        TcpBridge bridge = start(List.of(credential("api", "test.example")));
        try (Socket s = bridge.connect()) {
            OutputStream out = s.getOutputStream();
            InputStream in = s.getInputStream();
            out.write(new byte[] {5, 1, 0});
            assertThat(in.readNBytes(2)).containsExactly(5, 0);
            byte[] name = "test.example".getBytes(StandardCharsets.US_ASCII);
            out.write(new byte[] {5, 1, 0, 3, (byte) name.length});
            out.write(name);
            out.write(new byte[] {(byte) (https.port() >> 8), (byte) https.port()});
            assertThat(in.readNBytes(10)[1]).isEqualTo((byte) 0);
            SSLSocket t = (SSLSocket) trusting(proxy().certificateAuthority()).getSocketFactory().createSocket(s, "test.example", https.port(), true);
            assertThat(exchange(t, "GET /socks HTTP/1.1\r\nHost: test.example\r\n\r\n")).contains("seen GET /socks");
            t.close();
        }
        assertThat(receivedFor(https, "/socks")).contains("Authorization: " + SECRET + "\r\n");
        await().atMost(Duration.ofSeconds(5)).until(() -> !records.isEmpty());
        assertThat(records.getFirst().protocol()).isEqualTo("socks5");
        assertThat(records.getFirst().credentials()).containsExactly("api");
    }

    @Test
    void bindingHonoursPortsAndIpLiteralsMatchNoName() throws Exception {
        Credential onOtherPort = new Credential("ported", List.of(Destination.of("test.example", 1)), "X-Api-Key", new Secret("s3cr3t-port"));
        TcpBridge bridge = start(List.of(onOtherPort));
        String host = "test.example:" + http.port();
        try (Socket s = bridge.connect()) {
            exchange(s, "GET http://" + host + "/other-port HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
        }
        assertThat(receivedFor(http, "/other-port")).doesNotContain("s3cr3t");
        TcpBridge any = start(List.of(credential("api", "test.example")));
        try (Socket s = any.connect()) {
            exchange(s, "GET http://127.0.0.1:" + http.port() + "/by-address HTTP/1.1\r\n\r\n");
        }
        assertThat(receivedFor(http, "/by-address")).doesNotContain("s3cr3t");
    }

    @Test
    void closingTheProxyDropsTheCaKey() throws Exception {
        start(List.of(credential("api", "test.example")));
        EgressProxy p = proxy();
        SandboxCertificateAuthority ca = p.sandboxCa();
        assertThat(ca.chainFor("test.example")).hasSize(2);
        p.close();
        assertThatThrownBy(() -> ca.chainFor("other.example")).hasMessageContaining("closed");
        assertThatThrownBy(() -> ca.chainFor("test.example")).hasMessageContaining("closed");
    }

    @Test
    void aSandboxWithoutCredentialsHasNoCa() throws Exception {
        start(List.of());
        assertThat(proxy().certificateAuthorityPem()).isEmpty();
    }
}
