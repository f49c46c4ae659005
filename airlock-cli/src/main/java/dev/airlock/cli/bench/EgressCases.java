package dev.airlock.cli.bench;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressListener;
import dev.airlock.egress.EgressProxy;
import dev.airlock.egress.EgressRules;
import dev.airlock.egress.EgressSettings;
import dev.airlock.egress.HostResolver;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Egress throughput, as EgressProxyBenchmark and EgressSandboxBenchmark measure it: a 100 MB HTTP
 * download from a server on 127.0.0.1, direct and through an {@link EgressProxy} whose policy names
 * 127.0.0.0/8 (straight to its unix socket), and, when curl is installed, with curl on the host and
 * with curl inside a sandbox (agent bridge, unix socket, host proxy). Traffic stays on loopback.
 */
public final class EgressCases {

    public static final String SECTION = "egress";
    static final long BYTES = 100L << 20;
    private static final String HOST = "bench.test";
    private static final Path CURL = Path.of("/usr/bin/curl");

    private EgressCases() {
    }

    public static List<Stats> measure(Progress progress, OciDriverConfig config, int runs, List<String> notes) throws Exception {
        List<Stats> results = new ArrayList<>();
        NetworkPolicy policy = NetworkPolicy.of(List.of(Destination.of(HOST)), List.of(),
                List.of(new AddressRange("127.0.0.0/8")), Map.of(HOST, List.of("127.0.0.1")));
        Path dir = Files.createTempDirectory("airlock-bench-egress");
        Path socket = dir.resolve("egress.sock");
        try (LoopbackServer server = new LoopbackServer();
             EgressProxy proxy = EgressProxy.start("bench", socket, new EgressRules(policy, Set.of(), HostResolver.NONE),
                     EgressListener.NONE, EgressProxy.Options.DEFAULTS)) {
            int port = server.port();
            String direct = "GET /bytes?n=" + BYTES + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
            String proxied = "GET http://" + HOST + ":" + port + "/bytes?n=" + BYTES + " HTTP/1.1\r\nHost: " + HOST + ":" + port
                    + "\r\nConnection: close\r\n\r\n";
            SocketAddress tcp = new InetSocketAddress("127.0.0.1", port);
            SocketAddress unix = UnixDomainSocketAddress.of(socket);
            Stats d = timed(progress, "egress: 100 MB download, direct (Java client)", runs, () -> fetch(tcp, direct));
            Stats p = timed(progress, "egress: 100 MB download through EgressProxy (Java client)", runs, () -> fetch(unix, proxied));
            results.add(d);
            results.add(p.relativeTo(d));
            if (Files.isExecutable(CURL)) {
                String curl = "curl -s -o /dev/null -w '%{time_total}' ";
                Stats hostCurl = timed(progress, "egress: 100 MB download, curl on the host", runs,
                        () -> curlSeconds(curl + "http://127.0.0.1:" + port + "/bytes?n=" + BYTES));
                results.add(hostCurl);
                try (Engine engine = new Engine(new OciDriver(config), new EgressBroker(EgressSettings.DEFAULTS));
                     Sandbox sb = engine.create(SandboxSpec.defaults().withNetwork(policy))) {
                    Stats inSandbox = timed(progress, "egress: 100 MB download, curl in a sandbox (agent + proxy)", runs, () -> {
                        ExecResult r = sb.exec(ExecRequest.of("sh", "-c", curl + "http://" + HOST + ":" + port + "/bytes?n=" + BYTES)
                                .withTimeout(Duration.ofSeconds(120)));
                        if (r.exitCode() != 0) {
                            throw new IllegalStateException("curl in the sandbox failed: exit " + r.exitCode() + " " + r.stderrText());
                        }
                        return Double.parseDouble(r.stdoutText().trim()) * 1000;
                    });
                    results.add(inSandbox.relativeTo(hostCurl));
                }
            } else {
                notes.add("egress: /usr/bin/curl is not installed: no sandbox download case");
            }
        } finally {
            Files.deleteIfExists(socket);
            Files.deleteIfExists(dir);
        }
        for (Stats s : results) {
            notes.add(String.format("%s: %.0f MB/s (median)", s.name(), BYTES / 1e6 / (s.median() / 1000)));
        }
        return results;
    }

    @FunctionalInterface
    private interface Download {
        /** One download; its duration in milliseconds. */
        double millis() throws Exception;
    }

    private static Stats timed(Progress progress, String name, int runs, Download download) throws Exception {
        progress.begin(name, runs + 1);
        double[] ms = new double[runs];
        for (int i = -1; i < runs; i++) {
            double t = download.millis();
            if (i >= 0) {
                ms[i] = t;
            }
            progress.step();
        }
        progress.end();
        return Stats.of(SECTION, name, "ms", ms);
    }

    /** Sends {@code request} and reads the answer to its end; fails unless the whole body came. */
    private static double fetch(SocketAddress to, String request) throws IOException {
        long start = System.nanoTime();
        long total = 0;
        try (SocketChannel ch = SocketChannel.open(to instanceof UnixDomainSocketAddress
                ? StandardProtocolFamily.UNIX : StandardProtocolFamily.INET)) {
            ch.connect(to);
            ByteBuffer req = ByteBuffer.wrap(request.getBytes(StandardCharsets.ISO_8859_1));
            while (req.hasRemaining()) {
                ch.write(req);
            }
            ByteBuffer buf = ByteBuffer.allocateDirect(1 << 16);
            for (int r; (r = ch.read(buf)) >= 0; buf.clear()) {
                total += r;
            }
        }
        if (total < BYTES) {
            throw new IOException("the download ended after " + total + " of " + BYTES + " bytes");
        }
        return (System.nanoTime() - start) / 1e6;
    }

    private static double curlSeconds(String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sh", "-c", command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (p.waitFor() != 0) {
            throw new IllegalStateException("curl on the host failed: exit " + p.exitValue());
        }
        return Double.parseDouble(out) * 1000;
    }
}
