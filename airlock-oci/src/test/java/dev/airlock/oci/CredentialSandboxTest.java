package dev.airlock.oci;

import dev.airlock.core.Credential;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecResult;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.Secret;
import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressSettings;
import dev.airlock.egress.EgressProxy;
import dev.airlock.egress.EgressRecord;
import dev.airlock.egress.RecordingServer;
import dev.airlock.egress.TestTls;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * The credentials broker in real sandboxes: ordinary clients (curl, Python, Node) reach a local
 * HTTPS origin through the proxy, trusting the sandbox's CA through the variables Airlock sets,
 * and the origin receives the secret; the sandbox never holds it (environment, files, output),
 * and no other host receives it. test.example and other.example are the policy's name map
 * pointing at the host's 127.0.0.1; the proxy trusts the test CA upstream.
 */
class CredentialSandboxTest extends SandboxTestBase {

    /** Never written into a sandbox whole: code inside searches for the two halves joined in memory. */
    static final String SECRET_HEAD = "Bearer ghp_";
    static final String SECRET_TAIL = java.util.UUID.randomUUID().toString().replace("-", "");
    static final String SECRET = SECRET_HEAD + SECRET_TAIL;

    @TempDir
    static Path tmp;
    static TestTls tls;
    static RecordingServer https;
    static RecordingServer http;
    static final List<EgressRecord> records = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startServersAndEngine() throws Exception {
        tls = TestTls.create(tmp, "test.example", "other.example");
        https = new RecordingServer(tls.serverContext());
        http = new RecordingServer(null);
        engine.close();
        EgressSettings egress = EgressSettings.DEFAULTS.withListener(records::add)
                .withOptions(EgressProxy.Options.DEFAULTS.withUpstreamTls(tls.clientContext()));
        engine = new Engine(new OciDriver(CONFIG), new EgressBroker(egress));
    }

    @AfterAll
    static void stopServers() throws IOException {
        https.close();
        http.close();
        assertThat(records).allSatisfy(r -> assertThat(r.toString()).doesNotContain(SECRET_TAIL));
    }

    static NetworkPolicy policy() {
        return NetworkPolicy.of(List.of(Destination.of("test.example"), Destination.of("other.example")), List.of(),
                List.of(new AddressRange("127.0.0.0/8")), Map.of("test.example", List.of("127.0.0.1"), "other.example", List.of("127.0.0.1")));
    }

    static Credential githubApi() {
        return new Credential("github-api", List.of(Destination.of("test.example")), "Authorization", new Secret(SECRET));
    }

    static Sandbox withCredential() {
        return engine.create(SandboxSpec.defaults().withNetwork(policy()).withCredentials(List.of(githubApi())));
    }

    static void noSecretIn(ExecResult r) {
        assertThat(r.stdoutText() + r.stderrText()).doesNotContain(SECRET_TAIL);
    }

    @Test
    void curlAndPythonReachTheBoundHostWithTheSecretInjected() {
        assumeCurl();
        try (Sandbox sb = withCredential()) {
            // -v prints every header curl sends: the secret is not among them.
            ExecResult curl = exec(sb, "curl", "-sS", "-v", "https://test.example:" + https.port() + "/curl-tls");
            ok(curl);
            assertThat(curl.stdoutText()).contains("seen GET /curl-tls");
            noSecretIn(curl);
            ExecResult plain = exec(sb, "curl", "-sS", "-v", "http://test.example:" + http.port() + "/curl-plain");
            ok(plain);
            assertThat(plain.stdoutText()).contains("seen GET /curl-plain");
            noSecretIn(plain);
            ExecResult py = python(sb, """
                    import urllib.request
                    req = urllib.request.Request("https://test.example:%d/py-tls", headers={"Authorization": "Bearer forged"})
                    print(urllib.request.urlopen(req).read().decode())
                    """.formatted(https.port()));
            ok(py);
            assertThat(py.stdoutText()).contains("seen GET /py-tls");
            noSecretIn(py);
        }
        assertThat(https.awaitRequestFor("/curl-tls")).contains("Authorization: " + SECRET + "\r\n");
        assertThat(http.awaitRequestFor("/curl-plain")).contains("Authorization: " + SECRET + "\r\n");
        assertThat(https.awaitRequestFor("/py-tls")).contains("Authorization: " + SECRET + "\r\n").doesNotContain("forged");
        assertThat(records).anySatisfy(r -> {
            assertThat(r.destination()).isEqualTo("test.example");
            assertThat(r.credentials()).containsExactly("github-api");
        });
    }

    @Test
    void nodeTrustsTheSandboxCaThroughNodeExtraCaCerts() {
        assumeThat(Files.isExecutable(Path.of("/usr/bin/node"))).as("/usr/bin/node on the host").isTrue();
        try (Sandbox sb = withCredential()) {
            // Node's fetch ignores proxy variables: the CONNECT is made by hand, TLS verified as usual.
            sb.writeFile("/tmp/t.js", """
                    const net = require('net'), tls = require('tls');
                    const port = %d;
                    const s = net.connect(3128, '127.0.0.1', () => s.write(`CONNECT test.example:${port} HTTP/1.1\\r\\n\\r\\n`));
                    s.once('data', head => {
                      const t = tls.connect({socket: s, servername: 'test.example'}, () => {
                        t.write('GET /node HTTP/1.1\\r\\nHost: test.example\\r\\n\\r\\n');
                      });
                      let body = ''; t.on('data', d => body += d); t.on('end', () => console.log(body));
                      t.on('error', e => { console.log('tls error ' + e.message); process.exit(4); });
                    });
                    """.formatted(https.port()).getBytes(StandardCharsets.UTF_8));
            ExecResult r = exec(sb, "node", "/tmp/t.js");
            ok(r);
            assertThat(r.stdoutText()).contains("seen GET /node");
            noSecretIn(r);
        }
        assertThat(https.awaitRequestFor("/node")).contains("Authorization: " + SECRET + "\r\n");
    }

    @Test
    void theSandboxSeesThatACredentialExistsButNeverItsValue() {
        try (Sandbox sb = withCredential()) {
            ExecResult env = exec(sb, "sh", "-c", "env; echo; tr '\\0' '\\n' < /proc/self/environ; cat /proc/1/environ 2>&1; cat /proc/1/cmdline 2>&1");
            assertThat(env.stdoutText()).contains("AIRLOCK_CREDENTIAL_GITHUB_API=injected-by-airlock-for:test.example",
                    "SSL_CERT_FILE=/run/airlock/ca-bundle.pem", "CURL_CA_BUNDLE=/run/airlock/ca-bundle.pem",
                    "REQUESTS_CA_BUNDLE=/run/airlock/ca-bundle.pem", "NODE_EXTRA_CA_CERTS=/run/airlock/airlock-ca.pem");
            noSecretIn(env);
            // Every readable file where a host could have put it, searched from inside; the value is
            // joined only in this process's memory, so the script itself does not contain it.
            String searchScript = """
                    import os
                    needle = (%s + %s).encode()
                    hits, files = [], 0
                    for top in ["/run", "/tmp", "/workspace", "/etc", "/dev/shm", "/.airlock"]:
                        for root, dirs, names in os.walk(top, onerror=lambda e: None):
                            for n in names:
                                p = os.path.join(root, n)
                                try:
                                    if not os.path.isfile(p) or os.path.getsize(p) > 64 << 20:
                                        continue
                                    with open(p, "rb") as f:
                                        data = f.read()
                                except OSError:
                                    continue
                                files += 1
                                if needle in data:
                                    hits.append(p)
                    for p in ["/run/airlock/ca-bundle.pem", "/run/airlock/airlock-ca.pem"]:
                        data = open(p, "rb").read()
                        files += 1
                        if needle in data:
                            hits.append(p)
                    print("files", files, "hits", hits)
                    print("environ", needle in open("/proc/self/environ", "rb").read(), needle in repr(os.environ).encode())
                    """.formatted(pyString(SECRET_HEAD), pyString(SECRET_TAIL));
            ExecResult search = python(sb, searchScript);
            ok(search);
            assertThat(search.stdoutText()).contains("hits []", "environ False False");
            assertThat(Integer.parseInt(search.stdoutText().split(" ")[1])).isGreaterThan(10);
            noSecretIn(search);
            // Control: the same search finds the value once it is there.
            sb.writeFile("/workspace/planted", ("x" + SECRET + "y").getBytes(StandardCharsets.UTF_8));
            ExecResult control = python(sb, searchScript);
            assertThat(control.stdoutText()).contains("hits ['/workspace/planted']");
        }
    }

    @Test
    void theCaKeyIsNowhereInTheSandboxAndTheCaFilesArePublicAndReadOnly() {
        try (Sandbox sb = withCredential()) {
            ExecResult r = exec(sb, "sh", "-c", """
                    stat -c '%a %n' /run/airlock/airlock-ca.pem /run/airlock/ca-bundle.pem
                    grep -c 'BEGIN CERTIFICATE' /run/airlock/airlock-ca.pem
                    grep -rl 'PRIVATE KEY' /run/airlock/airlock-ca.pem /run/airlock/ca-bundle.pem /tmp /workspace /etc /dev/shm 2>/dev/null || echo 'no private key'
                    echo x >> /run/airlock/airlock-ca.pem 2>/dev/null || echo 'not writable'
                    ls /run/airlock 2>/dev/null || echo 'not listable'
                    """);
            ok(r);
            assertThat(r.stdoutText()).contains("644 /run/airlock/airlock-ca.pem", "644 /run/airlock/ca-bundle.pem", "\n1\n",
                    "no private key", "not writable", "not listable");
            // The bundle keeps the host's CAs: other hosts still verify as usual.
            ExecResult count = exec(sb, "sh", "-c", "grep -c 'BEGIN CERTIFICATE' /run/airlock/ca-bundle.pem");
            assertThat(Integer.parseInt(count.stdoutText().strip())).isGreaterThan(1);
        }
    }

    @Test
    void otherAllowedHostsNeverGetTheSecretHoweverTheCodeAsks() {
        try (Sandbox sb = withCredential()) {
            sb.writeFile("/tmp/test-ca.pem", readTestCa());
            ExecResult r = python(sb, """
                    import socket, ssl, urllib.request
                    H, T = %d, %d
                    def ask(request, tls_name=None):
                        s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
                        s.sendall(request.encode())
                        if tls_name:
                            head = b""
                            while b"\\r\\n\\r\\n" not in head:
                                head += s.recv(1)
                            return head.split(b"\\r\\n")[0].decode()
                        data = b""
                        while chunk := s.recv(65536):
                            data += chunk
                        return data.decode("latin-1").split("\\r\\n")[0]
                    # Plain HTTP to the other host, and to it with the bound host's name in Host.
                    print("plain-other:", ask(f"GET http://other.example:{H}/plain-other HTTP/1.1\\r\\nHost: other.example:{H}\\r\\n\\r\\n"))
                    print("plain-mixed:", ask(f"GET http://other.example:{H}/plain-mixed HTTP/1.1\\r\\nHost: test.example:{H}\\r\\n\\r\\n"))
                    # HTTPS to the other host: an opaque tunnel, the origin's own certificate.
                    ctx = ssl.create_default_context(cafile="/tmp/test-ca.pem")
                    print("tls-other:", urllib.request.urlopen(f"https://other.example:{T}/tls-other", context=ctx).read().decode().strip())
                    # Inside the bound host's tunnel, a request naming the other host.
                    s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
                    s.sendall(f"CONNECT test.example:{T} HTTP/1.1\\r\\n\\r\\n".encode())
                    head = b""
                    while b"\\r\\n\\r\\n" not in head:
                        head += s.recv(1)
                    t = ssl.create_default_context().wrap_socket(s, server_hostname="test.example")
                    t.sendall(f"GET /tls-mixed HTTP/1.1\\r\\nHost: other.example:{T}\\r\\n\\r\\n".encode())
                    print("tls-mixed:", t.recv(4096).decode().split("\\r\\n")[0])
                    """.formatted(http.port(), https.port()));
            ok(r);
            noSecretIn(r);
            assertThat(r.stdoutText()).contains("plain-other: HTTP/1.1 200", "plain-mixed: HTTP/1.1 400", "tls-other: seen GET /tls-other",
                    "tls-mixed: HTTP/1.1 400");
        }
        assertThat(http.awaitRequestFor("/plain-other")).doesNotContain(SECRET_TAIL);
        assertThat(https.awaitRequestFor("/tls-other")).doesNotContain(SECRET_TAIL);
        assertThat(http.all() + https.all()).doesNotContain("/plain-mixed", "/tls-mixed");
    }

    @Test
    void aPolicyUpdateKeepsTheCredentials() {
        assumeCurl();
        try (Sandbox sb = withCredential()) {
            sb.updateNetworkPolicy(NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(),
                    List.of(new AddressRange("127.0.0.0/8")), Map.of("test.example", List.of("127.0.0.1"))));
            ExecResult r = exec(sb, "curl", "-sS", "https://test.example:" + https.port() + "/after-update");
            ok(r);
            assertThat(r.stdoutText()).contains("seen GET /after-update");
        }
        assertThat(https.awaitRequestFor("/after-update")).contains("Authorization: " + SECRET + "\r\n");
    }

    @Test
    void aSandboxWithoutCredentialsIsUnchanged() {
        assumeCurl();
        try (Sandbox sb = engine.create(SandboxSpec.defaults().withNetwork(policy()))) {
            sb.writeFile("/tmp/test-ca.pem", readTestCa());
            ExecResult r = exec(sb, "sh", "-c", "env | grep -c -e SSL_CERT_FILE -e AIRLOCK_CREDENTIAL -e NODE_EXTRA_CA_CERTS; "
                    + "test -e /run/airlock/airlock-ca.pem || echo 'no ca'; "
                    + "curl -sS --cacert /tmp/test-ca.pem https://test.example:" + https.port() + "/no-credentials");
            assertThat(r.stdoutText()).startsWith("0\n").contains("no ca", "seen GET /no-credentials");
        }
        assertThat(https.awaitRequestFor("/no-credentials")).doesNotContain("Authorization");
    }

    @Test
    void credentialsWithoutANetworkPolicyAreRefused() {
        assertThatThrownBy(() -> engine.create(SandboxSpec.defaults().withCredentials(List.of(githubApi()))).close())
                .hasMessageContaining("no network policy");
    }

    private static String pyString(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    private static byte[] readTestCa() {
        try {
            return Files.readAllBytes(tls.caPem);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
