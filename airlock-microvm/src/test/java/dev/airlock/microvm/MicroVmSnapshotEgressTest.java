package dev.airlock.microvm;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressBroker;
import dev.airlock.egress.EgressSettings;
import dev.airlock.egress.RecordingServer;
import dev.airlock.oci.image.ImageStore;
import dev.airlock.oci.image.TestArchives;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Egress after a restore on the microVM tier: a process started before the memory snapshot, which
 * fetches through the sandbox's egress proxy when asked, fetches again in a fork, through the fork's
 * own bridge and proxy (the agent closed its egress connections before the snapshot; the fork's
 * host end of the egress port is new).
 */
class MicroVmSnapshotEgressTest {

    static Path storeRoot;
    static MicroVmDriverConfig config;
    static MicroVmDriver driver;
    static Engine engine;
    static RecordingServer origin;

    @BeforeAll
    static void start() throws IOException {
        storeRoot = TestImages.storeDir("airlock-vm-egress");
        config = MicroVmDriverConfig.defaults().withImageRoot(storeRoot.resolve("images"));
        byte[] layer = TestImages.busybox().bytes();
        ImageStore.at(config.imageRoot()).importArchive(TestArchives.dockerSave(storeRoot.resolve("bb.tar"), List.of(layer)), "vm-net");
        origin = new RecordingServer(null);
        driver = new MicroVmDriver(config);
        engine = new Engine(driver, new EgressBroker(EgressSettings.DEFAULTS));
    }

    @AfterAll
    static void stop() throws Exception {
        if (engine == null) {
            return;
        }
        String instance = driver.instance();
        engine.close();
        origin.close();
        dev.airlock.core.HostFiles.deleteTree(storeRoot);
        assertThat(MicroVmLeakCheck.findAll(config.stateRoot())).noneMatch(l -> l.contains(instance));
    }

    private static String sh(Sandbox sandbox, String line) {
        ExecResult r = sandbox.exec(ExecRequest.of("/bin/sh", "-c", line).withTimeout(Duration.ofSeconds(60)));
        assertThat(r.exitCode()).as(r.stderrText()).isZero();
        return r.stdoutText().strip();
    }

    /** Has the fetcher in {@code sandbox} fetch {@code path} of the origin; what it got. */
    private static String fetch(Sandbox sandbox, String path) {
        return sh(sandbox, "echo http://test.example:" + origin.port() + path + " > /tmp/url; touch /tmp/fetch;"
                + " while [ -e /tmp/fetch ]; do busybox usleep 50000; done; busybox cat /tmp/fetched");
    }

    @Test
    void aProcessThatFetchedBeforeTheSnapshotFetchesInTheForkThroughTheForksOwnProxy() throws Exception {
        NetworkPolicy policy = NetworkPolicy.of(List.of(Destination.of("test.example")), List.of(),
                List.of(new AddressRange("127.0.0.0/8")), Map.of("test.example", List.of("127.0.0.1")));
        SandboxSpec spec = new SandboxSpec("vm-net", Limits.DEFAULTS.withMemoryBytes(64L << 20), Map.of()).withNetwork(policy);
        Path snapshot = Files.createDirectories(storeRoot.resolve("snapshot"));
        try (Sandbox original = engine.create(spec)) {
            // started by an exec, so with the proxy's variables; busybox wget honours http_proxy
            sh(original, "(while :; do if [ -e /tmp/fetch ]; then busybox wget -q -O /tmp/fetched \"$(busybox cat /tmp/url)\""
                    + " || echo failed > /tmp/fetched; busybox rm /tmp/fetch; fi; busybox usleep 50000; done) </dev/null >/dev/null 2>&1 &");
            assertThat(fetch(original, "/before")).contains("seen GET /before");
            original.checkpoint(snapshot);
            assertThat(fetch(original, "/original-after")).as("the original's egress after its snapshot").contains("seen GET /original-after");
            try (Sandbox fork = engine.restore(spec, snapshot)) {
                assertThat(fetch(fork, "/fork")).as("the restored process's request, through the fork's proxy").contains("seen GET /fork");
            }
        }
    }
}
