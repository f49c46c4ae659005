package dev.airlock.it;

import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.Exec;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxInfo;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Sandboxes the server destroys by itself: when their time-to-live runs out, or when nothing
 * touched them for their idle timeout. Presence is watched with the sandbox list, which does not
 * count as activity on a sandbox (GET /v1/sandboxes/{id} would).
 */
class ServerExpiryTest {

    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(0));
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    private static boolean listed(String id) {
        return live.client.list().stream().map(SandboxInfo::id).anyMatch(id::equals);
    }

    @Test
    void sandboxWhoseTtlRunsOutIsDestroyedWithEveryProcessInIt() {
        RemoteSandbox s = live.client.create(SandboxSpec.builder().ttl(Duration.ofSeconds(2)).build());
        SandboxOnHost onHost = SandboxOnHost.of(s.id());
        BackgroundProcess sleeper = s.start(Exec.command("sleep", "1000"));
        assertThat(sleeper.isRunning()).isTrue();
        assertThat(onHost.processes()).as("agent and sleep on the host").hasSizeGreaterThanOrEqualTo(2);

        await().atMost(Duration.ofSeconds(30)).until(() -> !listed(s.id()));
        assertThatThrownBy(() -> live.client.get(s.id())).isInstanceOf(NotFoundException.class);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                assertThat(onHost.remains()).as("what the expired sandbox left on the host").isEmpty());
        s.close();   // already gone: not an error
    }

    @Test
    void requestsDoNotExtendTheTtl() {
        RemoteSandbox s = live.client.create(SandboxSpec.builder().ttl(Duration.ofSeconds(2)).build());
        SandboxOnHost onHost = SandboxOnHost.of(s.id());
        // Busy with requests the whole time: the ttl still ends it.
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).until(() -> {
            try {
                s.exec("true");
                return false;
            } catch (NotFoundException gone) {
                return true;
            }
        });
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(onHost.remains()).isEmpty());
    }

    @Test
    void sandboxLeftIdleIsDestroyed() {
        RemoteSandbox s = live.client.create(SandboxSpec.builder().idleTimeout(Duration.ofSeconds(2)).build());
        SandboxOnHost onHost = SandboxOnHost.of(s.id());
        assertThat(s.initialInfo().expiresAt()).as("the ttl is far away").isAfter(s.initialInfo().createdAt().plus(Duration.ofMinutes(5)));
        // No request touches it from here on.
        await().atMost(Duration.ofSeconds(30)).until(() -> !listed(s.id()));
        assertThatThrownBy(() -> live.client.get(s.id())).isInstanceOf(NotFoundException.class);
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(onHost.remains()).isEmpty());
    }

    @Test
    void requestsKeepASandboxFromBeingIdle() {
        try (RemoteSandbox s = live.client.create(SandboxSpec.builder().idleTimeout(Duration.ofSeconds(2)).build())) {
            // Touched every 300 ms for twice its idle timeout: it stays.
            await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(300))
                    .until(() -> s.info().running());
            assertThat(listed(s.id())).isTrue();
        }
    }

    /**
     * Observed: a running background process counts as activity. The sandbox outlives its idle
     * timeout for as long as the process runs (here twice the timeout, with no request at all), and
     * becomes idle — and is destroyed — only once the process ended.
     */
    @Test
    void sandboxWithARunningBackgroundProcessIsNotIdleUntilTheProcessEnds() {
        RemoteSandbox s = live.client.create(SandboxSpec.builder().idleTimeout(Duration.ofSeconds(2)).build());
        SandboxOnHost onHost = SandboxOnHost.of(s.id());
        s.start(Exec.command("sleep", "7"));
        // No request touches it; only the list is watched.
        await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(6)).pollInterval(Duration.ofMillis(250))
                .until(() -> listed(s.id()));
        await().atMost(Duration.ofSeconds(30)).until(() -> !listed(s.id()));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(onHost.remains()).isEmpty());
    }
}
