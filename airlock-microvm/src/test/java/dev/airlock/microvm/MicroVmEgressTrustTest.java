package dev.airlock.microvm;

import dev.airlock.core.Credential;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.Secret;
import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressProxy;
import dev.airlock.egress.EgressSettings;
import dev.airlock.egress.RecordingServer;
import dev.airlock.egress.TestTls;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * HTTPS through the egress proxy from a guest: when the proxy intercepts (the sandbox has a
 * credential), the broker writes the sandbox's trust bundle into its run directory and points the
 * usual variables at /run/airlock. The guest does not share the run directory; the driver exports
 * its public files alone, read-only, to the guest's /run/airlock. curl and Python then verify the
 * proxy's certificate as they do in a container, and the origin gets the injected credential. One
 * guest boot (software emulation: seconds).
 */
class MicroVmEgressTrustTest {

    private static final String SECRET = "Bearer ghp_" + UUID.randomUUID().toString().replace("-", "");

    @TempDir
    static Path tmp;
    static RecordingServer https;
    static MicroVmDriver driver;
    static Engine engine;

    @BeforeAll
    static void startOriginAndEngine() throws Exception {
        TestTls tls = TestTls.create(tmp, "test.example");
        https = new RecordingServer(tls.serverContext());
        driver = new MicroVmDriver(MicroVmDriverConfig.defaults());
        engine = new Engine(driver, new EgressBroker(EgressSettings.DEFAULTS
                .withOptions(EgressProxy.Options.DEFAULTS.withUpstreamTls(tls.clientContext()))));
    }

    @AfterAll
    static void stop() throws Exception {
        String instance = driver.instance();
        engine.close();
        https.close();
        assertThat(MicroVmLeakCheck.findAll(MicroVmDriverConfig.defaults().stateRoot())).noneMatch(l -> l.contains(instance));
    }

    @Test
    void curlAndPythonInAGuestTrustTheEgressCaWhereTheVariablesSay() {
        assumeThat(Files.isExecutable(Path.of("/usr/bin/curl"))).as("/usr/bin/curl on the host").isTrue();
        NetworkPolicy policy = NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(),
                List.of(new AddressRange("127.0.0.0/8")), Map.of("test.example", List.of("127.0.0.1")));
        Credential credential = new Credential("github-api", List.of(Destination.of("test.example")), "Authorization", new Secret(SECRET));
        try (Sandbox sb = engine.create(SandboxSpec.defaults().withNetwork(policy).withCredentials(List.of(credential)))) {
            ExecResult files = exec(sb, "sh", "-c", """
                    echo "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS"
                    stat -c '%a %u %n' /run/airlock/airlock-ca.pem /run/airlock/ca-bundle.pem
                    grep -c 'BEGIN CERTIFICATE' /run/airlock/airlock-ca.pem
                    grep -l 'PRIVATE KEY' /run/airlock/airlock-ca.pem /run/airlock/ca-bundle.pem || echo 'no private key'
                    echo x >> /run/airlock/airlock-ca.pem 2>/dev/null || echo 'not writable'
                    ls /run/airlock 2>/dev/null || echo 'not listable'
                    """);
            assertThat(files.stdoutText()).as(files.stderrText()).isEqualTo("""
                    /run/airlock/ca-bundle.pem /run/airlock/airlock-ca.pem
                    644 0 /run/airlock/airlock-ca.pem
                    644 0 /run/airlock/ca-bundle.pem
                    1
                    no private key
                    not writable
                    not listable
                    """);

            ExecResult curl = exec(sb, "curl", "-sS", "https://test.example:" + https.port() + "/curl-tls");
            assertThat(curl.stdoutText()).as(curl.stderrText()).contains("seen GET /curl-tls");
            ExecResult py = exec(sb, "python3", "-c", """
                    import urllib.request
                    print(urllib.request.urlopen("https://test.example:%d/py-tls").read().decode())
                    """.formatted(https.port()));
            assertThat(py.stdoutText()).as(py.stderrText()).contains("seen GET /py-tls");
            assertThat(curl.stdoutText() + curl.stderrText() + py.stdoutText() + py.stderrText()).doesNotContain(SECRET);
        }
        assertThat(https.awaitRequestFor("/curl-tls")).contains("Authorization: " + SECRET + "\r\n");
        assertThat(https.awaitRequestFor("/py-tls")).contains("Authorization: " + SECRET + "\r\n");
    }

    private static ExecResult exec(Sandbox sb, String... argv) {
        return sb.exec(ExecRequest.of(argv).withTimeout(Duration.ofSeconds(120)));
    }
}
