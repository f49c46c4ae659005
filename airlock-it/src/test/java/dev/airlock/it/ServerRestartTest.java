package dev.airlock.it;

import dev.airlock.cli.CliProcess;
import dev.airlock.client.Airlock;
import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.Exec;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@code airlock serve} as its own process, killed hard or stopped gracefully: sandboxes never
 * outlive their server's host side, and the next server on the same data directory reaps
 * whatever state a crash left.
 */
class ServerRestartTest {

    private static final Pattern SERVING = Pattern.compile("airlock: serving on (http://\\S+) \\(token in (\\S+)\\)");

    private Path dataDir;
    private CliProcess serve;
    /** Id prefixes of the sandboxes this test made, for a leak check blind to other suites' sandboxes. */
    private final java.util.Set<String> prefixes = new java.util.LinkedHashSet<>();

    private static String prefixOf(String sandboxId) {
        return sandboxId.substring(0, sandboxId.indexOf('-', 3) + 1);
    }

    @BeforeEach
    void dataDirectory() throws Exception {
        dataDir = Files.createTempDirectory("airlock-restart-");
    }

    @AfterEach
    void stopServeAndCheckNothingLeaked() throws Exception {
        if (serve != null && serve.process.isAlive()) {
            serve.process.destroyForcibly();
            serve.await();
        }
        LiveServer.deleteTree(dataDir);
        for (String prefix : prefixes) {
            assertThat(LiveServer.leftovers(prefix)).as("what sandboxes %s* left", prefix).isEmpty();
        }
    }

    /** Starts {@code airlock serve} in its own JVM and waits until it serves. */
    private Airlock startServe() {
        try {
            serve = CliProcess.start("serve", "--port", "0", "--data-dir", dataDir.toString(), "--pool-size", "0");
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        await().atMost(Duration.ofSeconds(60)).until(() -> SERVING.matcher(serve.stdout()).find() || !serve.process.isAlive());
        Matcher m = SERVING.matcher(serve.stdout());
        assertThat(m.find()).as("serve announced its address; stderr: %s", serve.stderr()).isTrue();
        assertThat(m.group(2)).isEqualTo(dataDir.resolve("token").toString());
        String token;
        try {
            token = Files.readString(dataDir.resolve("token")).trim();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return Airlock.connect(URI.create(m.group(1)), token);
    }

    private static AirlockServer startInProcess(Path dataDir) {
        return AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(0));
    }

    @Test
    void sandboxesOfAKilledServerDieWithItAndTheNextServerReapsThem() throws Exception {
        List<String> ids;
        List<SandboxOnHost> onHost;
        try (Airlock client = startServe()) {
            RemoteSandbox a = client.create(SandboxSpec.builder().label("restart", "a").build());
            RemoteSandbox b = client.create(SandboxSpec.builder().label("restart", "b").build());
            for (RemoteSandbox s : List.of(a, b)) {
                BackgroundProcess sleeper = s.start(Exec.command("sleep", "1000"));
                assertThat(sleeper.refresh().isRunning()).isTrue();
            }
            ids = List.of(a.id(), b.id());
            prefixes.add(prefixOf(a.id()));
            onHost = ids.stream().map(SandboxOnHost::of).toList();
            for (SandboxOnHost h : onHost) {
                assertThat(h.processes()).as("agent and sleep of %s", h.id).hasSizeGreaterThanOrEqualTo(2);
            }

            serve.process.destroyForcibly();   // SIGKILL: no shutdown hook runs
            serve.await();
        }

        // With its host side gone, each agent kills every process of its sandbox and exits.
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            for (SandboxOnHost h : onHost) {
                assertThat(h.processes()).as("processes of %s", h.id).isEmpty();
            }
        });

        AirlockServer next = startInProcess(dataDir);
        try (Airlock client = Airlock.connect(next.uri(), next.token())) {
            for (String id : ids) {
                assertThat(next.reapedAtStart()).as("reaped at start").anyMatch(line -> line.contains(id));
                assertThatThrownBy(() -> client.get(id)).isInstanceOf(NotFoundException.class);
            }
            assertThat(client.list()).isEmpty();
            for (SandboxOnHost h : onHost) {
                assertThat(h.remains()).as("what %s left after the reap", h.id).isEmpty();
            }
        } finally {
            next.close();
        }
        assertThat(LiveServer.leftovers(prefixOf(ids.getFirst()))).isEmpty();
    }

    @Test
    void sigtermStopsTheServerAfterDestroyingEverySandbox() throws Exception {
        List<SandboxOnHost> onHost;
        try (Airlock client = startServe()) {
            RemoteSandbox a = client.create();
            RemoteSandbox b = client.create(SandboxSpec.builder().memory("128m").build());
            a.start(Exec.command("sleep", "1000"));
            b.start(Exec.command("sleep", "1000"));
            onHost = List.of(SandboxOnHost.of(a.id()), SandboxOnHost.of(b.id()));
            prefixes.add(prefixOf(a.id()));

            serve.process.destroy();   // SIGTERM: the shutdown hook closes the server
            serve.await();
        }
        assertThat(LiveServer.leftovers(prefixOf(onHost.getFirst().id))).as("what the stopped server left").isEmpty();
        for (SandboxOnHost h : onHost) {
            assertThat(h.remains()).isEmpty();
        }

        AirlockServer next = startInProcess(dataDir);
        try {
            // (Scoped to this server's sandboxes: other suites on the host may leave their own for it to reap.)
            String prefix = prefixOf(onHost.getFirst().id);
            assertThat(next.reapedAtStart()).as("nothing to reap after a graceful stop").noneMatch(line -> line.contains(prefix));
        } finally {
            next.close();
        }
    }
}
