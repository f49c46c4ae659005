package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLSocket;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The proxy end to end, against servers on 127.0.0.1. "Public" names are the policy's name map
 * pointing at loopback, with 127.0.0.0/8 named; denial tests make no connection at all.
 */
class EgressProxyTest {

    @TempDir
    static Path tmp;
    static TestTls tls;
    static LocalServers servers;

    Path socket;
    EgressProxy proxy;
    TcpBridge bridge;
    final List<EgressRecord> records = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startServers() throws Exception {
        tls = TestTls.create(tmp, "test.example", "other.example");
        servers = new LocalServers(tls);
    }

    @AfterAll
    static void stopServers() throws IOException {
        servers.close();
    }

    @AfterEach
    void stopProxy() throws IOException {
        if (proxy != null) {
            proxy.close();
            assertThat(Files.exists(socket)).isFalse();
        }
        if (bridge != null) {
            bridge.close();
        }
    }

    static NetworkPolicy loopbackPolicy(List<Destination> allow, List<String> deny) {
        return NetworkPolicy.of(allow, deny, List.of(new AddressRange("127.0.0.0/8")),
                Map.of("test.example", List.of("127.0.0.1"), "other.example", List.of("127.0.0.1"),
                        "rebind.example", List.of("127.0.0.1")));
    }

    void start(NetworkPolicy policy) throws IOException {
        start(policy, Set.of(), EgressProxy.Options.DEFAULTS);
    }

    void start(NetworkPolicy policy, Set<InetSocketAddress> server, EgressProxy.Options options) throws IOException {
        socket = Files.createTempDirectory(tmp, "p").resolve("egress.sock");
        proxy = EgressProxy.start("sb-test", socket, new EgressRules(policy, server, HostResolver.NONE), records::add, options);
        bridge = new TcpBridge(socket);
    }

    record Response(int status, String head, String body) {
    }

    /** Sends {@code request} as is and reads the whole response (the proxy closes after it). */
    Response send(String request) throws IOException {
        try (Socket s = bridge.connect()) {
            s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            return parse(s.getInputStream().readAllBytes());
        }
    }

    static Response parse(byte[] raw) {
        String all = new String(raw, StandardCharsets.ISO_8859_1);
        int end = all.indexOf("\r\n\r\n");
        assertThat(end).as("a response head in: " + all).isPositive();
        String head = all.substring(0, end);
        return new Response(Integer.parseInt(head.split(" ")[1]), head, all.substring(end + 4));
    }

    /** Sends CONNECT and reads the proxy's answer head; the socket stays open for the tunnel. */
    static String connect(Socket s, String target, String... headers) throws IOException {
        StringBuilder req = new StringBuilder("CONNECT " + target + " HTTP/1.1\r\n");
        for (String h : headers) {
            req.append(h).append("\r\n");
        }
        s.getOutputStream().write(req.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
        return readHead(s.getInputStream());
    }

    static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            head.write(b);
        }
        return head.toString(StandardCharsets.ISO_8859_1);
    }

    String get(String url) {
        return "GET " + url + " HTTP/1.1\r\nHost: " + url.replaceFirst("http://", "").replaceFirst("/.*", "") + "\r\n\r\n";
    }

    @Test
    void forwardsAnAllowedRequestInOriginFormWithoutProxyHeaders() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example", servers.httpPort())), List.of()));
        String host = "test.example:" + servers.httpPort();
        Response r = send("GET http://" + host + "/path?q=1 HTTP/1.1\r\nHost: " + host
                + "\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nX-Keep: 1\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\n\r\n");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body()).contains("request GET /path?q=1", "host " + host, "header x-keep")
                .doesNotContain("proxy-authorization", "proxy-connection", "x-drop");
        await().atMost(Duration.ofSeconds(5)).until(() -> !records.isEmpty());
        EgressRecord rec = records.getFirst();
        assertThat(rec.allowed()).isTrue();
        assertThat(rec.protocol()).isEqualTo("http-forward");
        assertThat(rec.destination()).isEqualTo("test.example");
        assertThat(rec.port()).isEqualTo(servers.httpPort());
        assertThat(rec.address()).isEqualTo("127.0.0.1");
        assertThat(rec.rule()).startsWith("allow test.example:" + servers.httpPort());
        assertThat(rec.bytesDown()).isPositive();
        assertThat(rec.bytesUp()).isPositive();
        assertThat(rec.sandboxId()).isEqualTo("sb-test");
    }

    @Test
    void deniedRequestsGet403NamingTheRule() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("*.example")), List.of("other.example")));
        Response denied = send(get("http://other.example:" + servers.httpPort() + "/"));
        assertThat(denied.status()).isEqualTo(403);
        assertThat(denied.body()).contains("blocked by rule 'deny other.example'");
        assertThat(denied.head()).contains("X-Airlock-Rule: deny other.example");
        Response unknown = send(get("http://nowhere.test:" + servers.httpPort() + "/"));
        assertThat(unknown.status()).isEqualTo(403);
        assertThat(unknown.body()).contains("'default'");
        await().atMost(Duration.ofSeconds(5)).until(() -> records.size() >= 2);
        assertThat(records).allSatisfy(r -> assertThat(r.allowed()).isFalse());
    }

    @Test
    void connectTunnelsTlsToAnAllowedName() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example", servers.httpsPort())), List.of()));
        try (Socket s = bridge.connect()) {
            String head = connect(s, "test.example:" + servers.httpsPort(), "Host: test.example:" + servers.httpsPort());
            assertThat(head).startsWith("HTTP/1.1 200");
            try (SSLSocket tls = (SSLSocket) EgressProxyTest.tls.clientContext().getSocketFactory()
                    .createSocket(s, "test.example", servers.httpsPort(), true)) {
                var params = tls.getSSLParameters();
                params.setEndpointIdentificationAlgorithm("HTTPS");
                tls.setSSLParameters(params);
                tls.getOutputStream().write(("GET /hello HTTP/1.1\r\nHost: test.example\r\nConnection: close\r\n\r\n").getBytes());
                String response = new String(tls.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                assertThat(response).startsWith("HTTP/1.1 200").contains("request GET /hello");
            }
        }
    }

    @Test
    void connectToAnAllowedNameOnADisallowedPortIs403() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example", 443)), List.of()));
        try (Socket s = bridge.connect()) {
            String head = connect(s, "test.example:" + servers.echoPort());
            assertThat(head).startsWith("HTTP/1.1 403").contains("X-Airlock-Rule: port");
        }
    }

    @Test
    void aHostHeaderThatDiffersFromTheTargetIsRefused() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example"), Destination.of("other.example")), List.of()));
        int port = servers.httpPort();
        Response r = send("GET http://test.example:" + port + "/ HTTP/1.1\r\nHost: other.example:" + port + "\r\n\r\n");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.body()).contains("differs");
        Response two = send("GET http://test.example:" + port + "/ HTTP/1.1\r\nHost: test.example:" + port + "\r\nHost: x\r\n\r\n");
        assertThat(two.status()).isEqualTo(400);
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + port, "Host: other.example:" + port)).startsWith("HTTP/1.1 400");
        }
        assertThat(send("GET http://user@test.example:" + port + "/ HTTP/1.1\r\n\r\n").status()).isEqualTo(400);
        assertThat(send("GET https://test.example/ HTTP/1.1\r\n\r\n").status()).isEqualTo(400);
        assertThat(send("GET /relative HTTP/1.1\r\nHost: test.example\r\n\r\n").status()).isEqualTo(400);
        assertThat(send("GET http://test.example:" + port + "/ HTTP/1.1\r\nX-Folded: a\r\n b\r\n\r\n").status()).isEqualTo(400);
    }

    @Test
    void aSecondRequestOnTheSameConnectionReachesNoOtherHost() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example"), Destination.of("other.example")), List.of()));
        int port = servers.httpPort();
        Response r = send("GET http://test.example:" + port + "/first HTTP/1.1\r\nHost: test.example:" + port + "\r\n\r\n"
                + "GET http://other.example:" + port + "/second HTTP/1.1\r\nHost: other.example:" + port + "\r\n\r\n");
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body()).contains("request GET /first").doesNotContain("/second");
        await().atMost(Duration.ofSeconds(5)).until(() -> !records.isEmpty());
        Thread.sleep(200);
        // One connection, one decision, one destination: the proxy never parsed the second request.
        assertThat(records).extracting(EgressRecord::destination).containsExactly("test.example");
    }

    @Test
    void aPipelinedRequestToADeniedHostNeverReachesTheAdmittedOrigin() throws Exception {
        try (RecordingServer origin = new RecordingServer(null)) {
            start(loopbackPolicy(List.of(Destination.of("test.example", origin.port())), List.of("other.example")));
            String allowed = "test.example:" + origin.port();
            String denied = "other.example:" + origin.port();
            // The first request is allowed and has a body; the second, pipelined behind it, names a denied host
            // both in its absolute-form target and in Host, and would reach the admitted address if relayed.
            Response r = send("POST http://" + allowed + "/first HTTP/1.1\r\nHost: " + allowed + "\r\nContent-Length: 4\r\n\r\nbody"
                    + "GET http://" + denied + "/second HTTP/1.1\r\nHost: " + denied + "\r\n\r\n"
                    + "GET /third HTTP/1.1\r\nHost: " + denied + "\r\n\r\n");
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("seen POST /first\n");
            String upstream = origin.awaitRequestFor("/first");
            assertThat(upstream).endsWith("\r\n\r\nbody").doesNotContain("/second", "/third", "other.example");
            assertThat(origin.accepted).hasValue(1);
            assertThat(records).extracting(EgressRecord::destination).containsExactly("test.example");
        }
    }

    @Test
    void oversizedHeadersAreRefused() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example")), List.of()));
        Response r = send("GET http://test.example/ HTTP/1.1\r\nX-Big: " + "a".repeat(40_000) + "\r\n\r\n");
        assertThat(r.status()).isEqualTo(400);
        assertThat(r.body()).contains("larger than");
    }

    @Test
    void rebindingAnAllowedNameToLoopbackWithoutTheRangeIs403() throws Exception {
        start(NetworkPolicy.of(List.of(Destination.of("rebind.example")), List.of(), List.of(), Map.of("rebind.example", List.of("127.0.0.1"))));
        Response r = send(get("http://rebind.example:" + servers.httpPort() + "/"));
        assertThat(r.status()).isEqualTo(403);
        assertThat(r.body()).contains("'address loopback'");
    }

    @Test
    void ipSpellingsAndIpv6Literals() throws Exception {
        start(NetworkPolicy.of(List.of(), List.of(), List.of(), Map.of()).withLimits(8, 1 << 20));
        int port = servers.httpPort();
        for (String host : List.of("127.0.0.1", "2130706433", "0x7f.1", "017700000001", "[::ffff:127.0.0.1]", "[::1]")) {
            assertThat(send(get("http://" + host + ":" + port + "/")).status()).as(host).isEqualTo(403);
        }
        proxy.updatePolicy(NetworkPolicy.of(List.of(), List.of(), List.of(new AddressRange("127.0.0.0/8")), Map.of()));
        for (String host : List.of("2130706433", "0x7f.1", "017700000001", "[::ffff:127.0.0.1]")) {
            try (Socket s = bridge.connect()) {
                assertThat(connect(s, host + ":" + port)).as(host).startsWith("HTTP/1.1 200");
            }
        }
        assertThat(send(get("http://[::1]:" + port + "/")).body()).contains("ip-literal");
    }

    @Test
    void ipv6LoopbackThroughANamedRange() throws Exception {
        try (java.net.ServerSocket v6 = new java.net.ServerSocket()) {
            try {
                v6.bind(new InetSocketAddress(InetAddress.ofLiteral("::1"), 0));
            } catch (SocketException e) {
                org.junit.jupiter.api.Assumptions.abort("no IPv6 loopback on this host");
            }
            Thread.ofVirtual().start(() -> {
                try (Socket c = v6.accept()) {
                    c.getOutputStream().write("v6 hello".getBytes());
                } catch (IOException e) {
                    // test fails below
                }
            });
            start(NetworkPolicy.of(List.of(), List.of(), List.of(new AddressRange("::1/128")), Map.of()));
            try (Socket s = bridge.connect()) {
                assertThat(connect(s, "[::1]:" + v6.getLocalPort())).startsWith("HTTP/1.1 200");
                assertThat(new String(s.getInputStream().readAllBytes())).isEqualTo("v6 hello");
            }
        }
    }

    @Test
    void theServersOwnAddressIsDeniedEvenWithEverythingNamed() throws Exception {
        NetworkPolicy everything = NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(),
                List.of(new AddressRange("0.0.0.0/0"), new AddressRange("::/0")), Map.of("test.example", List.of("127.0.0.1")));
        start(everything, Set.of(new InetSocketAddress(InetAddress.ofLiteral("0.0.0.0"), servers.httpPort())), EgressProxy.Options.DEFAULTS);
        for (String host : List.of("127.0.0.1", "test.example", "2130706433", "[::ffff:127.0.0.1]")) {
            Response r = send(get("http://" + host + ":" + servers.httpPort() + "/"));
            assertThat(r.status()).as(host).isEqualTo(403);
            assertThat(r.body()).contains("airlock-server");
        }
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + servers.echoPort())).as("another port of the same host").startsWith("HTTP/1.1 200");
        }
    }

    @Test
    void socks5ConnectsByNameAndRefusesWithTheRightCodes() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example", servers.echoPort())), List.of()));
        try (Socket s = bridge.connect()) {
            assertThat(socks(s, "test.example", servers.echoPort())).isEqualTo(0);
            s.getOutputStream().write("ping".getBytes());
            assertThat(new String(s.getInputStream().readNBytes(4))).isEqualTo("ping");
        }
        try (Socket s = bridge.connect()) {
            assertThat(socks(s, "other.example", servers.echoPort())).isEqualTo(2);
        }
        try (Socket s = bridge.connect()) {
            // An IPv4 address type: needs a range; the policy names 127.0.0.0/8.
            s.getOutputStream().write(new byte[] {5, 1, 0});
            assertThat(s.getInputStream().readNBytes(2)).containsExactly(5, 0);
            int p = servers.echoPort();
            s.getOutputStream().write(new byte[] {5, 1, 0, 1, 127, 0, 0, 1, (byte) (p >> 8), (byte) p});
            assertThat(s.getInputStream().readNBytes(10)[1]).isEqualTo((byte) 0);
        }
        try (Socket s = bridge.connect()) {
            // BIND is not supported.
            s.getOutputStream().write(new byte[] {5, 1, 0});
            s.getInputStream().readNBytes(2);
            s.getOutputStream().write(new byte[] {5, 2, 0, 3, 12, 't', 'e', 's', 't', '.', 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0, 80});
            assertThat(s.getInputStream().readNBytes(10)[1]).isEqualTo((byte) 7);
        }
        try (Socket s = bridge.connect()) {
            // Only "no authentication" is offered back.
            s.getOutputStream().write(new byte[] {5, 1, 2});
            assertThat(s.getInputStream().readNBytes(2)).containsExactly(5, 0xff);
        }
    }

    static int socks(Socket s, String host, int port) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(new byte[] {5, 1, 0});
        DataInputStream in = new DataInputStream(s.getInputStream());
        assertThat(in.readNBytes(2)).containsExactly(5, 0);
        byte[] name = host.getBytes(StandardCharsets.US_ASCII);
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        req.write(new byte[] {5, 1, 0, 3, (byte) name.length});
        req.write(name);
        req.write(port >> 8);
        req.write(port);
        out.write(req.toByteArray());
        byte[] reply = in.readNBytes(10);
        return reply[1];
    }

    @Test
    void revocationClosesAnOpenTunnel() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example")), List.of()));
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 200");
            s.getOutputStream().write("one".getBytes());
            assertThat(new String(s.getInputStream().readNBytes(3))).isEqualTo("one");
            proxy.updatePolicy(loopbackPolicy(List.of(Destination.of("other.example")), List.of()));
            s.setSoTimeout(10_000);
            assertThat(s.getInputStream().read()).as("the tunnel is closed").isEqualTo(-1);
        }
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 403");
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> records.stream().anyMatch(r -> r.rule().contains("cut: policy update: default")));
    }

    @Test
    void revocationKeepsConnectionsTheNewPolicyStillAllows() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example")), List.of()));
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 200");
            proxy.updatePolicy(loopbackPolicy(List.of(Destination.of("test.example"), Destination.of("more.example")), List.of()));
            s.getOutputStream().write("two".getBytes());
            assertThat(new String(s.getInputStream().readNBytes(3))).isEqualTo("two");
        }
    }

    @Test
    void connectionLimit() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example")), List.of()).withLimits(2, 1 << 20));
        List<Socket> open = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                Socket s = bridge.connect();
                open.add(s);
                assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 200");
            }
            try (Socket s = bridge.connect()) {
                assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 429").contains("limit connections");
            }
        } finally {
            for (Socket s : open) {
                s.close();
            }
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> proxy.openConnections() == 0);
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 200");
        }
    }

    @Test
    void byteLimitCutsTheTransferAndRefusesMore() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example")), List.of()).withLimits(4, 1 << 20));
        Response partial;
        try (Socket s = bridge.connect()) {
            s.getOutputStream().write(get("http://test.example:" + servers.httpPort() + "/bytes?n=" + (8 << 20)).getBytes());
            byte[] all = s.getInputStream().readAllBytes();
            assertThat(all.length).isLessThan(2 << 20);
        } catch (SocketException e) {
            // reset by the cut: also fine
        }
        Response r = send(get("http://test.example:" + servers.httpPort() + "/"));
        assertThat(r.status()).isEqualTo(403);
        assertThat(r.body()).contains("limit bytes");
    }

    @Test
    void idleAndHandshakeTimeouts() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example")), List.of()), Set.of(),
                new EgressProxy.Options(Duration.ofSeconds(5), Duration.ofMillis(500), Duration.ofMillis(800), 16 * 1024));
        try (Socket s = bridge.connect()) {
            s.getOutputStream().write("CONNECT test.exa".getBytes());
            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 200");
            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> records.stream().anyMatch(r -> r.rule().contains("idle timeout")));
    }

    @Test
    void transfers100MegabytesIntact() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example")), List.of()));
        long n = 100L << 20;
        try (Socket s = bridge.connect()) {
            s.getOutputStream().write(get("http://test.example:" + servers.httpPort() + "/bytes?n=" + n).getBytes());
            InputStream in = s.getInputStream();
            String head = readHead(in);
            assertThat(head).startsWith("HTTP/1.1 200").contains("Content-length: " + n);
            MessageDigest got = MessageDigest.getInstance("SHA-256");
            MessageDigest want = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 16];
            byte[] expected = new byte[1 << 16];
            long total = 0;
            for (int r; (r = in.read(buf)) > 0; ) {
                for (int i = 0; i < r; i++) {
                    expected[i] = LocalServers.pattern(total + i);
                }
                got.update(buf, 0, r);
                want.update(expected, 0, r);
                total += r;
            }
            assertThat(total).isEqualTo(n);
            assertThat(HexFormat.of().formatHex(got.digest())).isEqualTo(HexFormat.of().formatHex(want.digest()));
        }
        // And 100 MB up through a tunnel, echoed back.
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 200");
            MessageDigest sent = MessageDigest.getInstance("SHA-256");
            Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    byte[] buf = new byte[1 << 16];
                    for (long off = 0; off < n; off += buf.length) {
                        for (int i = 0; i < buf.length; i++) {
                            buf[i] = LocalServers.pattern(off + i);
                        }
                        sent.update(buf);
                        s.getOutputStream().write(buf);
                    }
                    s.shutdownOutput();
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            MessageDigest back = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 16];
            long total = 0;
            for (int r; (r = s.getInputStream().read(buf)) > 0; ) {
                back.update(buf, 0, r);
                total += r;
            }
            writer.join();
            assertThat(total).isEqualTo(n);
            assertThat(back.digest()).isEqualTo(sent.digest());
        }
    }

    @Test
    void closingTheProxyEndsItsConnections() throws Exception {
        start(loopbackPolicy(List.of(Destination.of("test.example")), List.of()));
        try (Socket s = bridge.connect()) {
            assertThat(connect(s, "test.example:" + servers.echoPort())).startsWith("HTTP/1.1 200");
            proxy.close();
            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
        assertThatThrownBy(() -> send(get("http://test.example/"))).isInstanceOf(Throwable.class);
    }
}
