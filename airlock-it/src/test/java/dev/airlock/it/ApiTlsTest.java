package dev.airlock.it;

import dev.airlock.core.AirlockException;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.StringWriter;
import java.math.BigInteger;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Date;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The API's port over HTTPS ({@code serve --tls-cert/--tls-key}): a certificate the test makes for
 * {@code localhost}, {@code airlock.test} and 127.0.0.1; a client that trusts it gets the API, a
 * plain-HTTP one does not; the console's cookies are {@code Secure}; the certificate's names pass the
 * Host check and others do not; files that cannot serve HTTPS stop the start with what is wrong.
 */
class ApiTlsTest {

    private static Path dir;
    private static Path cert;
    private static Path key;
    private static X509Certificate certificate;
    private static AirlockServer server;
    private static HttpClient trusting;

    /** A self-signed certificate for {@code names} (DNS) and 127.0.0.1, with its key, as PEM files in {@code dir}. */
    private static KeyPair issue(Path certFile, Path keyFile, String... names) throws Exception {
        KeyPair keys = keyPair();
        X509Certificate c = selfSigned(keys, true, names);
        Files.writeString(certFile, pem(c));
        Files.writeString(keyFile, pem(new org.bouncycastle.openssl.jcajce.JcaPKCS8Generator(keys.getPrivate(), null).generate()));
        certificate = certificate == null ? c : certificate;
        return keys;
    }

    private static KeyPair keyPair() throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        return g.generateKeyPair();
    }

    /** A certificate for {@code names} (DNS), and 127.0.0.1 when {@code loopback}, signed by its own key. */
    private static X509Certificate selfSigned(KeyPair keys, boolean loopback, String... names) throws Exception {
        X500Name subject = new X500Name("CN=" + names[0]);
        Instant now = Instant.now();
        var b = new JcaX509v3CertificateBuilder(subject, BigInteger.valueOf(now.toEpochMilli()), Date.from(now.minus(1, ChronoUnit.HOURS)),
                Date.from(now.plus(1, ChronoUnit.DAYS)), subject, keys.getPublic());
        java.util.List<GeneralName> alt = new java.util.ArrayList<>();
        for (String name : names) {
            alt.add(new GeneralName(GeneralName.dNSName, name));
        }
        if (loopback) {
            alt.add(new GeneralName(GeneralName.iPAddress, "127.0.0.1"));
        }
        b.addExtension(Extension.subjectAlternativeName, false, new GeneralNames(alt.toArray(GeneralName[]::new)));
        return new JcaX509CertificateConverter().getCertificate(b.build(new JcaContentSignerBuilder("SHA256withECDSA")
                .build(keys.getPrivate())));
    }

    private static String pem(Object o) throws IOException {
        StringWriter w = new StringWriter();
        try (JcaPEMWriter pem = new JcaPEMWriter(w)) {
            pem.writeObject(o);
        }
        return w.toString();
    }

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("airlock-tls-");
        cert = dir.resolve("cert.pem");
        key = dir.resolve("key.pem");
        issue(cert, key, "localhost", "airlock.test");
        server = AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(dir.resolve("data")).withPoolSize(0)
                .withE2bPort(ServerConfig.E2B_OFF).withTls(new ServerConfig.TlsFiles(cert, key)));
        trusting = HttpClient.newBuilder().sslContext(dev.airlock.client.CaCertificates.sslContext(cert)).build();
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        LiveServer.deleteTree(dir);
    }

    private static HttpResponse<String> get(String url, String origin) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + server.token());
        if (origin != null) {
            b.header("Origin", "https://" + origin);
        }
        return trusting.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theApiAnswersOverHttpsAndNotOverPlainHttp() throws Exception {
        assertThat(server.uri().getScheme()).isEqualTo("https");
        String base = "https://localhost:" + server.uri().getPort();
        assertThat(get(base + "/v1/sandboxes", null).statusCode()).isEqualTo(200);
        HttpResponse<String> plain = null;
        try {
            plain = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.uri().getPort() + "/v1/sandboxes"))
                    .header("Authorization", "Bearer " + server.token()).build(), HttpResponse.BodyHandlers.ofString());
        } catch (IOException refused) {
            // the TLS side closed the plain connection
        }
        assertThat(plain == null || plain.statusCode() == 400).as("plain HTTP: %s", plain == null ? null : plain.body()).isTrue();
    }

    /**
     * The SDK and the CLI's commands that call a server trust a server whose certificate is not a
     * public authority's when given it (or its authority) as a CA file; without one they refuse the
     * connection and say what to give.
     */
    @Test
    void theSdkAndTheCliTrustTheServerGivenItsCaFileAndSayWhatToGiveWithoutIt() {
        URI https = URI.create("https://localhost:" + server.uri().getPort());
        try (dev.airlock.client.Airlock sdk = dev.airlock.client.Airlock.builder().url(https).token(server.token()).caFile(cert).build()) {
            assertThat(sdk.list()).isEmpty();
        }
        try (dev.airlock.client.Airlock untrusting = dev.airlock.client.Airlock.builder().url(https).token(server.token()).build()) {
            assertThatThrownBy(untrusting::list).isInstanceOf(dev.airlock.client.AirlockConnectionException.class)
                    .hasMessageContaining("does not trust").hasMessageContaining("caFile");
        }
        String[] call = {"approvals", "list", "--url", https.toString(), "--token-file", dir.resolve("data/token").toString()};
        InProcessCli trusted = InProcessCli.run(concat(call, "--ca-file", cert.toString()));
        assertThat(trusted.exit()).as(trusted.err()).isZero();
        InProcessCli untrusted = InProcessCli.run(call);
        assertThat(untrusted.exit()).isEqualTo(3);
        assertThat(untrusted.err()).contains("does not trust", "--ca-file");
        InProcessCli missing = InProcessCli.run(concat(call, "--ca-file", dir.resolve("missing.pem").toString()));
        assertThat(missing.exit()).isEqualTo(2);
        assertThat(missing.err()).contains("is not a file");
        assertThatThrownBy(() -> dev.airlock.client.CaCertificates.sslContext(key)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(key.toString());
    }

    /** {@code run --server} over HTTPS, with its own client (not the JDK's HttpClient): as the commands above. */
    @Test
    void runOnTheServerOverHttpsTrustsTheServerGivenItsCaFileAndSaysWhatToGiveWithoutIt() {
        String[] call = {"run", "--server", "--url", "https://localhost:" + server.uri().getPort(), "--token-file",
                dir.resolve("data/token").toString(), "--lang", "sh", "--code", "echo over tls"};
        InProcessCli trusted = InProcessCli.run(concat(call, "--ca-file", cert.toString()));
        assertThat(trusted.exit()).as(trusted.err()).isZero();
        assertThat(trusted.out()).isEqualTo("over tls\n");
        InProcessCli untrusted = InProcessCli.run(call);
        assertThat(untrusted.exit()).isEqualTo(3);
        assertThat(untrusted.err()).contains("does not trust", "--ca-file");
    }

    /**
     * Hostile: a server whose certificate the CA file vouches for but which names another host (an
     * attacker's, holding a certificate from the same authority) gets no request, so no token: run
     * --server checks the name, not only the authority.
     */
    @Test
    void runOnTheServerSendsNoTokenToACertificateForAnotherName() throws Exception {
        KeyPair keys = keyPair();
        X509Certificate elsewhere = selfSigned(keys, false, "elsewhere.test");
        Path ca = dir.resolve("elsewhere.pem");
        Files.writeString(ca, pem(elsewhere));
        java.security.KeyStore store = java.security.KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry("server", keys.getPrivate(), "x".toCharArray(), new java.security.cert.Certificate[] {elsewhere});
        javax.net.ssl.KeyManagerFactory managers = javax.net.ssl.KeyManagerFactory.getInstance(javax.net.ssl.KeyManagerFactory.getDefaultAlgorithm());
        managers.init(store, "x".toCharArray());
        javax.net.ssl.SSLContext tls = javax.net.ssl.SSLContext.getInstance("TLS");
        tls.init(managers.getKeyManagers(), null, null);
        java.util.concurrent.atomic.AtomicInteger received = new java.util.concurrent.atomic.AtomicInteger();
        try (java.net.ServerSocket listener = tls.getServerSocketFactory().createServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            Thread impostor = Thread.ofVirtual().start(() -> {
                try (java.net.Socket s = listener.accept()) {
                    s.setSoTimeout(10_000);
                    received.addAndGet(s.getInputStream().readNBytes(1).length);
                } catch (IOException e) {
                    // the client gave up during the handshake
                }
            });
            InProcessCli cli = InProcessCli.run("run", "--server", "--url", "https://127.0.0.1:" + listener.getLocalPort(), "--token-file",
                    dir.resolve("data/token").toString(), "--ca-file", ca.toString(), "--lang", "sh", "--code", "true");
            impostor.join(15_000);
            assertThat(cli.exit()).as(cli.err()).isEqualTo(3);
            assertThat(cli.err()).contains("127.0.0.1");
            assertThat(received.get()).as("bytes of a request sent to a server whose certificate names another host").isZero();
        }
    }

    private static String[] concat(String[] a, String... more) {
        return java.util.stream.Stream.concat(java.util.Arrays.stream(a), java.util.Arrays.stream(more)).toArray(String[]::new);
    }

    @Test
    void theConsolesCookiesAreSecureAndTheCertificatesNamesAreTheServersOwn() throws Exception {
        int port = server.uri().getPort();
        // the console's session endpoint, reached by a name of the certificate (the client resolves it to 127.0.0.1 by the URL's address)
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("https://localhost:" + port + "/console/session"));
        HttpResponse<String> page = trusting.send(b.build(), HttpResponse.BodyHandlers.ofString());
        assertThat(page.statusCode()).as(page.body()).isEqualTo(401);   // not signed in: a sign-in token, in a cookie
        assertThat(page.headers().allValues("Set-Cookie")).isNotEmpty().allSatisfy(c -> assertThat(c).contains("; Secure", "HttpOnly"));
        // the Origin of a page the server serves under a name of its certificate passes; another name's does not
        assertThat(get("https://localhost:" + port + "/console/session", "localhost:" + port).statusCode()).isEqualTo(401);
        HttpResponse<String> foreign = get("https://localhost:" + port + "/console/session", "elsewhere.test:" + port);
        assertThat(foreign.statusCode()).isEqualTo(403);
        assertThat(foreign.body()).contains("is not allowed");
        // the Host a browser sends when it reaches the server by a name of its certificate passes (DNS-rebinding check)
        assertThat(statusLine("airlock.test:" + port)).contains(" 401 ");
        assertThat(statusLine("rebound.test:" + port)).contains(" 403 ");
    }

    /** The status line of GET /console/session sent over TLS to 127.0.0.1 with {@code host} as its Host header. */
    private static String statusLine(String host) throws Exception {
        try (javax.net.ssl.SSLSocket s = (javax.net.ssl.SSLSocket) trusting.sslContext().getSocketFactory().createSocket("127.0.0.1",
                server.uri().getPort())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(("GET /console/session HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
                    .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            return new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream(), java.nio.charset.StandardCharsets.US_ASCII))
                    .readLine();
        }
    }

    @Test
    void filesThatCannotServeHttpsStopTheStartWithWhatIsWrong() throws Exception {
        Path otherCert = dir.resolve("other-cert.pem");
        Path otherKey = dir.resolve("other-key.pem");
        issue(otherCert, otherKey, "other.test");
        ServerConfig base = ServerConfig.defaults().withPort(0).withDataDir(dir.resolve("refused")).withE2bPort(ServerConfig.E2B_OFF);
        assertThatThrownBy(() -> AirlockServer.start(base.withTls(new ServerConfig.TlsFiles(cert, otherKey))))
                .isInstanceOf(AirlockException.class).hasMessageContaining("is not the key of the certificate");
        assertThatThrownBy(() -> AirlockServer.start(base.withTls(new ServerConfig.TlsFiles(cert, cert))))
                .isInstanceOf(AirlockException.class).hasMessageContaining("holds no unencrypted private key");
        assertThatThrownBy(() -> AirlockServer.start(base.withTls(new ServerConfig.TlsFiles(key, key))))
                .isInstanceOf(AirlockException.class).hasMessageContaining("TLS certificate").hasMessageContaining("--tls-cert");
        assertThatThrownBy(() -> AirlockServer.start(base.withTls(new ServerConfig.TlsFiles(dir.resolve("missing.pem"), key))))
                .isInstanceOf(AirlockException.class).hasMessageContaining("missing.pem");
        assertThat(dir.resolve("refused")).as("nothing was made for a start that was refused").doesNotExist();
    }
}
