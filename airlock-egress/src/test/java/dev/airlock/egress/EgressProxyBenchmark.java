package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Proxy overhead, printed as ratios, never asserted: a local 100 MB download and a small request,
 * each direct and through the proxy (TCP to the unix socket, as the agent's bridge does, then the
 * proxy, then TCP to the server). Run it with
 * {@code mvn -o -pl airlock-egress test -Dtest=EgressProxyBenchmark -Dairlock.bench=true}.
 */
@EnabledIfSystemProperty(named = "airlock.bench", matches = "true", disabledReason = "a benchmark: run with -Dairlock.bench=true")
class EgressProxyBenchmark {

    @TempDir
    Path tmp;

    @Test
    void downloadAndLatencyDirectVersusProxied() throws Exception {
        TestTls tls = TestTls.create(tmp, "test.example");
        try (LocalServers servers = new LocalServers(tls)) {
            NetworkPolicy policy = NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(),
                    List.of(new AddressRange("127.0.0.0/8")), Map.of("test.example", List.of("127.0.0.1")));
            Path socket = tmp.resolve("egress.sock");
            try (EgressProxy proxy = EgressProxy.start("bench", socket, new EgressRules(policy, Set.of(), HostResolver.NONE),
                    EgressListener.NONE, EgressProxy.Options.DEFAULTS);
                 TcpBridge bridge = new TcpBridge(socket)) {
                int port = servers.httpPort();
                long n = 100L << 20;
                String big = "GET /bytes?n=" + n + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
                String bigProxied = "GET http://test.example:" + port + "/bytes?n=" + n + " HTTP/1.1\r\nHost: test.example:" + port + "\r\n\r\n";
                String small = "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
                String smallProxied = "GET http://test.example:" + port + "/x HTTP/1.1\r\nHost: test.example:" + port + "\r\n\r\n";
                for (int i = 0; i < 2; i++) {
                    fetch(port, big);
                    fetch(bridge.port(), bigProxied);
                }
                double[] direct = new double[5];
                double[] proxied = new double[5];
                for (int i = 0; i < 5; i++) {
                    direct[i] = fetch(port, big);
                    proxied[i] = fetch(bridge.port(), bigProxied);
                }
                double d = median(direct);
                double p = median(proxied);
                System.out.printf("egress bench: 100 MB download  direct %.0f ms (%.0f MB/s)  proxied %.0f ms (%.0f MB/s)  ratio %.2fx%n",
                        d, 100_000 / d, p, 100_000 / p, p / d);
                double[] sd = new double[200];
                double[] sp = new double[200];
                for (int i = 0; i < 200; i++) {
                    sd[i] = fetch(port, small);
                    sp[i] = fetch(bridge.port(), smallProxied);
                }
                System.out.printf("egress bench: small request    direct %.3f ms  proxied %.3f ms  ratio %.2fx (+%.3f ms)%n",
                        median(sd), median(sp), median(sp) / median(sd), median(sp) - median(sd));
            }
        }
    }

    private static double fetch(int port, String request) throws IOException {
        long start = System.nanoTime();
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            InputStream in = s.getInputStream();
            byte[] buf = new byte[1 << 16];
            long total = 0;
            for (int r; (r = in.read(buf)) > 0; ) {
                total += r;
            }
            if (total == 0) {
                throw new IOException("empty response");
            }
        }
        return (System.nanoTime() - start) / 1e6;
    }

    private static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }
}
