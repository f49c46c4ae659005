package dev.airlock.oci;

import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressSettings;
import dev.airlock.egress.LocalServers;
import dev.airlock.egress.TestTls;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static dev.airlock.core.contract.Hostile.py;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Network egress in real sandboxes: ordinary clients (curl, Python, Node) reach local test servers
 * by name through the agent's bridge and the host's policy proxy, and nothing else gets out. The
 * "public" name test.example is the policy's name map pointing at 127.0.0.1 of the host, with
 * 127.0.0.0/8 named; no test connects anywhere but the host's loopback.
 */
class EgressSandboxTest extends SandboxTestBase {

    @TempDir
    static Path tmp;
    static TestTls tls;
    static LocalServers servers;
    /** Stands in for the Airlock server's own listener. */
    static ServerSocket airlockServer;
    static final List<EgressRecord> records = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startServersAndEngine() throws Exception {
        tls = TestTls.create(tmp, "test.example", "other.example");
        servers = new LocalServers(tls);
        airlockServer = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
        // The base class's engine knows no server address; this one does, and records egress.
        engine.close();
        EgressSettings egress = EgressSettings.DEFAULTS
                .withServerAddresses(Set.of(new InetSocketAddress(InetAddress.getLoopbackAddress(), airlockServer.getLocalPort())))
                .withListener(records::add);
        engine = new Engine(new OciDriver(CONFIG), new EgressBroker(egress));
    }

    @AfterAll
    static void stopServers() throws IOException {
        servers.close();
        airlockServer.close();
    }

    static NetworkPolicy policy(List<Destination> allow) {
        return NetworkPolicy.of(allow, List.of(), List.of(new AddressRange("127.0.0.0/8")),
                Map.of("test.example", List.of("127.0.0.1"), "other.example", List.of("127.0.0.1"),
                        "private.example", List.of("10.1.2.3")));
    }

    static NetworkPolicy testExample() {
        return policy(List.of(Destination.of("test.example")));
    }

    static Sandbox sandbox(NetworkPolicy policy) {
        return engine.create(SandboxSpec.defaults().withNetwork(policy));
    }

    static void assumeCurl() {
        assumeThat(Files.isExecutable(Path.of("/usr/bin/curl"))).as("/usr/bin/curl on the host").isTrue();
    }

    @Test
    void everyProcessGetsTheProxyEnvironment() {
        try (Sandbox sb = sandbox(testExample())) {
            ExecResult r = exec(sb, "sh", "-c", "env | grep -i proxy | sort");
            ok(r);
            assertThat(r.stdoutText()).contains("HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
                    "http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "ALL_PROXY=socks5h://127.0.0.1:3128",
                    "NO_PROXY=localhost,127.0.0.1,::1");
        }
        try (Sandbox sb = sandbox(NetworkPolicy.NONE)) {
            ExecResult r = exec(sb, "sh", "-c", "env | grep -ci proxy || true");
            assertThat(r.stdoutText().strip()).isEqualTo("0");
        }
    }

    @Test
    void curlOverHttpHttpsAndSocks() {
        assumeCurl();
        try (Sandbox sb = sandbox(testExample())) {
            sb.writeFile("/tmp/ca.pem", readCa());
            ExecResult http = exec(sb, "curl", "-sS", "http://test.example:" + servers.httpPort() + "/via-http");
            ok(http);
            assertThat(http.stdoutText()).contains("request GET /via-http", "host test.example:" + servers.httpPort());
            ExecResult https = exec(sb, "curl", "-sS", "--cacert", "/tmp/ca.pem", "https://test.example:" + servers.httpsPort() + "/via-tls");
            ok(https);
            assertThat(https.stdoutText()).contains("request GET /via-tls");
            ExecResult socks = exec(sb, "curl", "-sS", "--proxy", "socks5h://127.0.0.1:3128", "http://test.example:" + servers.httpPort() + "/via-socks");
            ok(socks);
            assertThat(socks.stdoutText()).contains("request GET /via-socks");
        }
        assertThat(records).anySatisfy(r -> {
            assertThat(r.protocol()).isEqualTo("socks5");
            assertThat(r.allowed()).isTrue();
            assertThat(r.destination()).isEqualTo("test.example");
        });
    }

    @Test
    void pythonUrllibOverHttpAndHttps() {
        try (Sandbox sb = sandbox(testExample())) {
            sb.writeFile("/tmp/ca.pem", readCa());
            ExecResult r = python(sb, """
                    import ssl, urllib.request
                    print(urllib.request.urlopen("http://test.example:%d/py").read().decode())
                    ctx = ssl.create_default_context(cafile="/tmp/ca.pem")
                    print(urllib.request.urlopen("https://test.example:%d/pys", context=ctx).read().decode())
                    """.formatted(servers.httpPort(), servers.httpsPort()));
            ok(r);
            assertThat(r.stdoutText()).contains("request GET /py\n", "request GET /pys\n");
        }
    }

    @Test
    void nodeThroughAConnectTunnelItOpensItself() {
        assumeThat(Files.isExecutable(Path.of("/usr/bin/node"))).as("/usr/bin/node on the host").isTrue();
        // Node 20's fetch ignores proxy variables and its bundled undici exposes no ProxyAgent
        // without the undici package (not installed here): the tunnel is made by hand, and TLS
        // trusts the test CA through NODE_EXTRA_CA_CERTS, as npm would be configured.
        try (Sandbox sb = sandbox(testExample())) {
            sb.writeFile("/tmp/ca.pem", readCa());
            sb.writeFile("/tmp/t.js", """
                    const net = require('net'), tls = require('tls');
                    const port = %d;
                    const s = net.connect(3128, '127.0.0.1', () => s.write(`CONNECT test.example:${port} HTTP/1.1\\r\\nHost: test.example:${port}\\r\\n\\r\\n`));
                    s.once('data', head => {
                      if (!head.toString().startsWith('HTTP/1.1 200')) { console.log('proxy said ' + head); process.exit(3); }
                      const t = tls.connect({socket: s, servername: 'test.example'}, () => {
                        t.write('GET /node HTTP/1.1\\r\\nHost: test.example\\r\\nConnection: close\\r\\n\\r\\n');
                      });
                      let body = ''; t.on('data', d => body += d); t.on('end', () => { console.log(body); });
                      t.on('error', e => { console.log('tls error ' + e.message); process.exit(4); });
                    });
                    """.formatted(servers.httpsPort()).getBytes(StandardCharsets.UTF_8));
            ExecResult r = sb.exec(new ExecRequest(List.of("node", "/tmp/t.js"), Map.of("NODE_EXTRA_CA_CERTS", "/tmp/ca.pem"),
                    "/tmp", null, Duration.ofSeconds(60)));
            ok(r);
            assertThat(r.stdoutText()).contains("HTTP/1.1 200", "request GET /node");
        }
    }

    @Test
    void aLargeDownloadOverHttpsArrivesIntact() throws Exception {
        long n = 64L << 20;
        MessageDigest want = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[1 << 16];
        for (long off = 0; off < n; off += buf.length) {
            for (int i = 0; i < buf.length; i++) {
                buf[i] = LocalServers.pattern(off + i);
            }
            want.update(buf);
        }
        try (Sandbox sb = sandbox(testExample())) {
            sb.writeFile("/tmp/ca.pem", readCa());
            // As pip would: urllib over HTTPS through HTTPS_PROXY, the CA from SSL_CERT_FILE.
            sb.writeFile("/tmp/t.py", """
                    import hashlib, urllib.request
                    h = hashlib.sha256(); total = 0
                    with urllib.request.urlopen("https://test.example:%d/bytes?n=%d") as r:
                        while chunk := r.read(1 << 16):
                            h.update(chunk); total += len(chunk)
                    print(total, h.hexdigest())
                    """.formatted(servers.httpsPort(), n).getBytes(StandardCharsets.UTF_8));
            ExecResult r = sb.exec(new ExecRequest(List.of("/usr/bin/python3", "/tmp/t.py"),
                    Map.of("SSL_CERT_FILE", "/tmp/ca.pem", "REQUESTS_CA_BUNDLE", "/tmp/ca.pem"), "/tmp", null, Duration.ofSeconds(120)));
            ok(r);
            assertThat(r.stdoutText().strip()).isEqualTo(n + " " + HexFormat.of().formatHex(want.digest()));
        }
    }

    @Test
    void directConnectionsDnsAndRawSocketsStillFail() {
        try (Sandbox sb = sandbox(testExample())) {
            ExecResult r = python(sb, py("""
                    import socket
                    def tcp(host, port):
                        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(3); s.connect((host, port))
                    def udp_dns(server):
                        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
                        q = b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x04test\\x07example\\x00\\x00\\x01\\x00\\x01"
                        s.sendto(q, (server, 53)); s.recvfrom(512)
                    attempt("tcp host port", lambda: tcp("127.0.0.1", %d))
                    attempt("tcp 10.0.0.1", lambda: tcp("10.0.0.1", 80))
                    attempt("udp dns 8.8.8.8", lambda: udp_dns("8.8.8.8"))
                    attempt("udp dns 127.0.0.53", lambda: udp_dns("127.0.0.53"))
                    attempt("resolve", lambda: socket.getaddrinfo("test.example", 80))
                    attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
                    attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
                    """.formatted(servers.httpPort())));
            String out = r.stdoutText() + r.stderrText();
            assertThat(out).contains("tcp host port: ECONNREFUSED", "tcp 10.0.0.1: ENETUNREACH", "udp dns 8.8.8.8: ENETUNREACH",
                    "raw: EPERM", "packet: EPERM");
            assertThat(out).doesNotContain("udp dns 127.0.0.53: ok", "resolve: ok");
        }
    }

    @Test
    void hostileDestinationsAreRefusedByTheProxy() {
        try (Sandbox sb = sandbox(policy(List.of(Destination.of("test.example", servers.httpPort()), Destination.of("private.example"))))) {
            ExecResult r = python(sb, """
                    import socket
                    def ask(request):
                        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
                        s.sendall(request.encode("latin-1"))
                        data = b""
                        while chunk := s.recv(65536):
                            data += chunk
                            if request.startswith("CONNECT") and b"\\r\\n\\r\\n" in data:
                                break
                        return data.decode("latin-1").split("\\r\\n")[0] + " | " + data.decode("latin-1").split("\\r\\n\\r\\n", 1)[-1].strip()
                    P = %d; E = %d; A = %d
                    print("private:", ask(f"GET http://private.example:{P}/ HTTP/1.1\\r\\nHost: private.example:{P}\\r\\n\\r\\n"))
                    print("port:", ask(f"CONNECT test.example:{E} HTTP/1.1\\r\\nHost: test.example:{E}\\r\\n\\r\\n"))
                    print("hostmix:", ask(f"GET http://test.example:{P}/ HTTP/1.1\\r\\nHost: other.example:{P}\\r\\n\\r\\n"))
                    print("connect-hostmix:", ask(f"CONNECT test.example:{P} HTTP/1.1\\r\\nHost: other.example:{P}\\r\\n\\r\\n"))
                    print("server:", ask(f"GET http://127.0.0.1:{A}/ HTTP/1.1\\r\\nHost: 127.0.0.1:{A}\\r\\n\\r\\n"))
                    print("server-decimal:", ask(f"CONNECT 2130706433:{A} HTTP/1.1\\r\\n\\r\\n"))
                    print("v6:", ask(f"GET http://[::1]:{P}/ HTTP/1.1\\r\\nHost: [::1]:{P}\\r\\n\\r\\n"))
                    print("mapped:", ask(f"GET http://[::ffff:127.0.0.1]:{A}/ HTTP/1.1\\r\\n\\r\\n"))
                    print("octal:", ask(f"GET http://017700000001:{P}/x HTTP/1.1\\r\\n\\r\\n"))
                    """.formatted(servers.httpPort(), servers.echoPort(), airlockServer.getLocalPort()));
            ok(r);
            String out = r.stdoutText();
            assertThat(out).contains("private: HTTP/1.1 403 Forbidden | airlock egress: blocked by rule 'address private'");
            assertThat(out).contains("port: HTTP/1.1 403 Forbidden");
            assertThat(out).contains("hostmix: HTTP/1.1 400 Bad Request");
            assertThat(out).contains("connect-hostmix: HTTP/1.1 400 Bad Request");
            assertThat(out).contains("server: HTTP/1.1 403 Forbidden | airlock egress: blocked by rule 'airlock-server'");
            assertThat(out).contains("server-decimal: HTTP/1.1 403 Forbidden");
            assertThat(out).contains("mapped: HTTP/1.1 403 Forbidden | airlock egress: blocked by rule 'airlock-server'");
            // ::1 is not in 127.0.0.0/8: an IPv6 literal needs its own range.
            assertThat(out).contains("v6: HTTP/1.1 403 Forbidden | airlock egress: blocked by rule 'ip-literal'");
            // An octal spelling of 127.0.0.1 is that address, and the policy names 127.0.0.0/8.
            assertThat(out).contains("octal: HTTP/1.1 200 OK | request GET /x");
        }
        try (Sandbox sb = sandbox(NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(), List.of(),
                Map.of("test.example", List.of("127.0.0.1"))))) {
            // Without the range, no spelling of loopback gets through, nor a name that resolves to it.
            ExecResult r = python(sb, """
                    import socket
                    for host in ["127.0.0.1", "2130706433", "0x7f.1", "017700000001", "[::ffff:127.0.0.1]", "[::1]", "test.example"]:
                        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
                        s.sendall(f"GET http://{host}:%d/ HTTP/1.1\\r\\n\\r\\n".encode())
                        print(host, s.recv(4096).decode().split("\\r\\n")[0])
                    """.formatted(servers.httpPort()));
            ok(r);
            assertThat(r.stdoutText().lines()).hasSize(7).allSatisfy(l -> assertThat(l).endsWith("HTTP/1.1 403 Forbidden"));
        }
    }

    @Test
    void curlSeesTheRefusals() {
        assumeCurl();
        try (Sandbox sb = sandbox(policy(List.of(Destination.of("test.example", servers.httpPort()), Destination.of("private.example"))))) {
            ExecResult priv = exec(sb, "curl", "-s", "-o", "/dev/stderr", "-w", "%{http_code}", "http://private.example/");
            assertThat(priv.stdoutText()).isEqualTo("403");
            assertThat(priv.stderrText()).contains("address private");
            ExecResult port = exec(sb, "curl", "-sS", "--proxytunnel", "http://test.example:" + servers.echoPort() + "/");
            assertThat(port.exitCode()).isNotZero();
            assertThat(port.stderrText()).contains("403");
        }
    }

    @Test
    void revocationCutsAnOpenConnectionMidRun() throws Exception {
        try (Sandbox sb = sandbox(testExample())) {
            sb.writeFile("/tmp/t.py", """
                    import socket, time
                    s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
                    s.sendall(b"CONNECT test.example:%d HTTP/1.1\\r\\n\\r\\n")
                    head = b""
                    while b"\\r\\n\\r\\n" not in head:
                        head += s.recv(1)
                    print("open", head.split(b"\\r\\n")[0].decode(), flush=True)
                    for i in range(300):
                        try:
                            s.sendall(b"x")
                            if s.recv(1) == b"":
                                print("closed", flush=True); break
                        except OSError as e:
                            print("closed", e, flush=True); break
                        time.sleep(0.05)
                    else:
                        print("still open", flush=True)
                    """.formatted(servers.echoPort()).getBytes(StandardCharsets.UTF_8));
            CountDownLatch open = new CountDownLatch(1);
            Execution ex = sb.start(ExecRequest.of("/usr/bin/python3", "/tmp/t.py").withTimeout(Duration.ofSeconds(60)), new OutputListener() {
                @Override
                public void stdout(byte[] chunk) {
                    if (new String(chunk, StandardCharsets.UTF_8).contains("open HTTP/1.1 200")) {
                        open.countDown();
                    }
                }
            });
            assertThat(open.await(30, TimeUnit.SECONDS)).as("the tunnel opened").isTrue();
            sb.updateNetworkPolicy(policy(List.of(Destination.of("other.example"))));
            ExecResult r = ex.await();
            ok(r);
            assertThat(r.stdoutText()).contains("closed").doesNotContain("still open");
            assertThat(sb.network().allow()).extracting(Destination::host).containsExactly("other.example");
            ExecResult after = exec(sb, "/usr/bin/python3", "-c", """
                    import urllib.request, urllib.error
                    try:
                        urllib.request.urlopen("http://test.example:%d/")
                    except urllib.error.HTTPError as e:
                        print(e.code)
                    """.formatted(servers.httpPort()));
            assertThat(after.stdoutText().strip()).isEqualTo("403");
        }
    }

    @Test
    void bypassingTheAgentReachesTheSamePolicyAndIpv6LoopbackWorksToo() {
        try (Sandbox sb = sandbox(testExample())) {
            ExecResult r = python(sb, """
                    import socket
                    def ask(family, address, request):
                        s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(10); s.connect(address)
                        s.sendall(request.encode())
                        data = b""
                        while chunk := s.recv(65536):
                            data += chunk
                        return data.decode("latin-1")
                    P = %d
                    unix = ask(socket.AF_UNIX, "/run/airlock/egress.sock", f"GET http://private.example:{P}/ HTTP/1.1\\r\\n\\r\\n")
                    print("unix denied:", unix.split("\\r\\n")[0])
                    unix = ask(socket.AF_UNIX, "/run/airlock/egress.sock", f"GET http://test.example:{P}/unix HTTP/1.1\\r\\n\\r\\n")
                    print("unix allowed:", unix.split("\\r\\n")[0], "/unix" in unix)
                    v6 = ask(socket.AF_INET6, ("::1", 3128), f"GET http://test.example:{P}/v6 HTTP/1.1\\r\\n\\r\\n")
                    print("v6 allowed:", v6.split("\\r\\n")[0], "/v6" in v6)
                    """.formatted(servers.httpPort()));
            ok(r);
            assertThat(r.stdoutText()).contains("unix denied: HTTP/1.1 403 Forbidden", "unix allowed: HTTP/1.1 200 OK True",
                    "v6 allowed: HTTP/1.1 200 OK True");
        }
    }

    @Test
    void theEgressSocketBelongsToTheSandboxUserOnly() throws Exception {
        try (Sandbox sb = sandbox(testExample())) {
            ExecResult r = exec(sb, "sh", "-c", "stat -c '%a %u %F' /run/airlock/egress.sock");
            ok(r);
            assertThat(r.stdoutText()).isEqualTo("600 1000 socket\n");
        }
        try (Sandbox sb = sandbox(NetworkPolicy.NONE)) {
            ExecResult r = exec(sb, "sh", "-c", "test -e /run/airlock/egress.sock || echo no socket; python3 -c \"import socket; socket.create_connection(('127.0.0.1', 3128))\" 2>&1 | tail -1");
            assertThat(r.stdoutText()).contains("no socket", "ConnectionRefusedError");
        }
    }

    @Test
    void aSandboxWithoutNetworkCannotBeGivenSomeLater() {
        try (Sandbox sb = sandbox(NetworkPolicy.NONE)) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> sb.updateNetworkPolicy(testExample()))
                    .hasMessageContaining("created without network");
        }
    }

    private static byte[] readCa() {
        try {
            return Files.readAllBytes(tls.caPem);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}
