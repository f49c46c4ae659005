package dev.airlock.oci;

import dev.airlock.core.ExecResult;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.RequestApproval;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.Engine;
import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressSettings;
import dev.airlock.egress.EgressProxy;
import dev.airlock.egress.EgressRecord;
import dev.airlock.egress.RecordingServer;
import dev.airlock.egress.RequestGate;
import dev.airlock.egress.TestTls;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Request approvals in real sandboxes: curl and Python POST to a local HTTPS origin (test.example,
 * the policy's name for the host's 127.0.0.1) through the proxy, trusting the sandbox's CA through
 * the variables Airlock sets. The server-wide gate approves paths under /approve and refuses the
 * rest: an approved POST reaches the origin with its body, a refused one gets 403 and the origin
 * never hears of it; a GET is not asked about.
 */
class RequestApprovalSandboxTest extends SandboxTestBase {

    record Asked(String sandboxId, String method, String host, int port, String target) {
    }

    @TempDir
    static Path tmp;
    static TestTls tls;
    static RecordingServer https;
    static final List<EgressRecord> records = new CopyOnWriteArrayList<>();
    static final List<Asked> asked = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void startServerAndEngine() throws Exception {
        tls = TestTls.create(tmp, "test.example");
        https = new RecordingServer(tls.serverContext());
        engine.close();
        RequestGate gate = (sandboxId, method, host, port, target) -> {
            asked.add(new Asked(sandboxId, method, host, port, target));
            return target.startsWith("/approve");
        };
        EgressSettings egress = EgressSettings.DEFAULTS.withListener(records::add)
                .withOptions(EgressProxy.Options.DEFAULTS.withUpstreamTls(tls.clientContext()));
        EgressBroker broker = new EgressBroker(egress);
        broker.decideRequestsWith(gate);
        engine = new Engine(new OciDriver(CONFIG), broker);
    }

    @AfterAll
    static void stopServer() throws IOException {
        https.close();
    }

    static Sandbox gated() {
        NetworkPolicy policy = NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(), List.of(new AddressRange("127.0.0.0/8")),
                Map.of("test.example", List.of("127.0.0.1")));
        RequestApproval writes = new RequestApproval(List.of(Destination.of("test.example")), Set.of("POST", "DELETE"));
        return engine.create(SandboxSpec.defaults().withNetwork(policy).withRequestApprovals(List.of(writes)));
    }

    /** Every program of this class must succeed: it prints what it got, and the test reads that. */
    static ExecResult exec(Sandbox sb, String... argv) {
        return ok(SandboxTestBase.exec(sb, argv));
    }

    @Test
    void curlAndPythonPostsWaitForTheGateAndOnlyApprovedOnesReachTheOrigin() {
        assumeCurl();
        String base = "https://test.example:" + https.port();
        String sandboxId;
        try (Sandbox sb = gated()) {
            sandboxId = sb.id().value();
            ExecResult env = exec(sb, "sh", "-c", "env");
            assertThat(env.stdoutText()).contains("SSL_CERT_FILE=/run/airlock/ca-bundle.pem", "AIRLOCK_REQUEST_APPROVALS=DELETE,POST@test.example")
                    .doesNotContain("AIRLOCK_CREDENTIAL");

            ExecResult approved = exec(sb, "curl", "-sS", "-X", "POST", "--data-binary", "curl-payload", base + "/approve/curl");
            assertThat(approved.stdoutText()).contains("seen POST /approve/curl");
            ExecResult denied = exec(sb, "curl", "-sS", "-w", "\\nstatus %{http_code}\\n", "-X", "POST", "--data-binary", "curl-payload",
                    base + "/deny/curl");
            assertThat(denied.stdoutText()).contains("needs a person's approval and was not approved", "status 403");
            ExecResult read = exec(sb, "curl", "-sS", base + "/read");
            assertThat(read.stdoutText()).contains("seen GET /read");

            sb.writeFile("/tmp/t.py", """
                    import urllib.error, urllib.request
                    def post(path):
                        req = urllib.request.Request("%s" + path, data=b"py-payload", method="POST")
                        try:
                            return urllib.request.urlopen(req, timeout=30).read().decode().strip()
                        except urllib.error.HTTPError as e:
                            return "%%d %%s" %% (e.code, e.read().decode().strip())
                    print(post("/approve/py"))
                    print(post("/deny/py"))
                    """.formatted(base).getBytes(StandardCharsets.UTF_8));
            ExecResult py = exec(sb, "/usr/bin/python3", "/tmp/t.py");
            assertThat(py.stdoutText()).contains("seen POST /approve/py", "403 airlock egress: blocked by rule 'request approval: POST denied'");
        }
        assertThat(asked).containsExactly(new Asked(sandboxId, "POST", "test.example", https.port(), "/approve/curl"),
                new Asked(sandboxId, "POST", "test.example", https.port(), "/deny/curl"),
                new Asked(sandboxId, "POST", "test.example", https.port(), "/approve/py"),
                new Asked(sandboxId, "POST", "test.example", https.port(), "/deny/py"));
        assertThat(https.awaitRequestFor("/approve/curl")).endsWith("\r\n\r\ncurl-payload");
        assertThat(https.awaitRequestFor("/approve/py")).endsWith("\r\n\r\npy-payload");
        assertThat(https.all()).doesNotContain("/deny/");
        // Three connections reached the origin: the two approved POSTs and the GET.
        assertThat(https.accepted.get()).isEqualTo(3);
        assertThat(records).filteredOn(r -> r.sandboxId().equals(sandboxId) && r.approval() != null)
                .extracting(EgressRecord::approval).containsExactlyInAnyOrder("approved", "denied", "approved", "denied");
    }
}
