package dev.airlock.oci;

import dev.airlock.egress.LocalServers;
import dev.airlock.egress.TestTls;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole egress path, printed as a ratio, never asserted: a local 100 MB HTTP download with
 * curl from inside a sandbox (agent bridge, unix socket, host proxy) against the same curl run
 * directly on the host. Run it with
 * {@code mvn -o -pl airlock-oci test -Dtest=EgressSandboxBenchmark -Dairlock.bench=true}.
 */
@EnabledIfSystemProperty(named = "airlock.bench", matches = "true", disabledReason = "a benchmark: run with -Dairlock.bench=true")
class EgressSandboxBenchmark extends SandboxTestBase {

    @TempDir
    static Path tmp;

    @Test
    void hundredMegabytesThroughTheSandboxVersusOnTheHost() throws Exception {
        TestTls tls = TestTls.create(tmp, "test.example");
        try (LocalServers servers = new LocalServers(tls)) {
            String path = "/bytes?n=" + (100L << 20);
            NetworkPolicy policy = NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(),
                    List.of(new AddressRange("127.0.0.0/8")), Map.of("test.example", List.of("127.0.0.1")));
            String curl = "curl -s -o /dev/null -w '%{time_total}' ";
            double[] host = new double[5];
            double[] sandboxed = new double[5];
            try (Sandbox sb = engine.create(SandboxSpec.defaults().withNetwork(policy))) {
                for (int i = -1; i < 5; i++) {
                    Process p = new ProcessBuilder("sh", "-c", curl + "http://127.0.0.1:" + servers.httpPort() + path).start();
                    double h = Double.parseDouble(new String(p.getInputStream().readAllBytes()).trim());
                    p.waitFor();
                    ExecResult r = sb.exec(ExecRequest.of("sh", "-c", curl + "http://test.example:" + servers.httpPort() + path)
                            .withTimeout(Duration.ofSeconds(120)));
                    assertThat(r.exitCode()).as(r.stderrText()).isZero();
                    if (i >= 0) {
                        host[i] = h;
                        sandboxed[i] = Double.parseDouble(r.stdoutText().trim());
                    }
                }
            }
            double h = median(host) * 1000;
            double s = median(sandboxed) * 1000;
            System.out.printf("egress bench: 100 MB with curl  host direct %.0f ms (%.0f MB/s)  sandbox via agent+proxy %.0f ms (%.0f MB/s)  ratio %.2fx%n",
                    h, 100_000 / h, s, 100_000 / s, s / h);
        }
    }

    private static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }
}
