package dev.airlock.it;

import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.ConflictException;
import dev.airlock.client.Exec;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxInfo;
import dev.airlock.client.SandboxSpec;
import dev.airlock.server.audit.AuditRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Pause and resume through the real server and the Java SDK: a paused sandbox says so, refuses
 * what needs its frozen agent with a 409 that says to resume it, is not destroyed for being idle
 * (its ttl still holds), resumes where it was, and can be destroyed while paused leaving nothing.
 * Whether its processes really stop is the driver contract's {@code Pause} concern.
 */
class ServerPauseTest {

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
    void aPausedSandboxRefusesWorkUntilResumedAndKeepsItsState() {
        try (RemoteSandbox s = live.client.create(SandboxSpec.defaults())) {
            s.files().write("/workspace/note.txt", "kept".getBytes(StandardCharsets.UTF_8));
            BackgroundProcess sleeper = s.start(Exec.command("sleep", "600"));

            SandboxInfo paused = s.pause();
            assertThat(paused.state()).isEqualTo("paused");
            assertThat(paused.paused()).isTrue();
            assertThat(s.pause().paused()).as("pausing twice changes nothing").isTrue();
            assertThat(s.info().state()).isEqualTo("paused");

            assertThatThrownBy(() -> s.exec("true")).isInstanceOf(ConflictException.class)
                    .hasMessageContaining("is paused").hasMessageContaining("resume it");
            assertThatThrownBy(() -> s.files().read("/workspace/note.txt")).isInstanceOf(ConflictException.class);
            assertThatThrownBy(() -> sleeper.signal(15)).isInstanceOf(ConflictException.class);

            SandboxInfo resumed = s.resume();
            assertThat(resumed.running()).isTrue();
            assertThat(new String(s.files().read("/workspace/note.txt"), StandardCharsets.UTF_8)).isEqualTo("kept");
            assertThat(sleeper.isRunning()).as("its background process lives on").isTrue();
            assertThat(s.exec("echo", "after").stdout()).isEqualTo("after\n");
        }
    }

    @Test
    void aPausedSandboxIsNotIdleButItsTtlStillEndsIt() {
        RemoteSandbox s = live.client.create(SandboxSpec.builder().idleTimeout(Duration.ofSeconds(2)).ttl(Duration.ofSeconds(8)).build());
        SandboxOnHost onHost = SandboxOnHost.of(s.id());
        s.pause();
        // No request touches it for twice its idle timeout: paused, it stays.
        await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(6)).pollInterval(Duration.ofMillis(250))
                .until(() -> listed(s.id()));
        // Its ttl ends it, paused as it is, and nothing of it remains.
        await().atMost(Duration.ofSeconds(30)).until(() -> !listed(s.id()));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(onHost.remains()).isEmpty());
        assertThat(live.audit(s.id(), AuditRecord.LIFECYCLE)).extracting(AuditRecord::detail)
                .anySatisfy(d -> assertThat(d).contains("\"event\":\"paused\""));
    }

    @Test
    void aPausedSandboxCanBeDestroyedAndLeavesNothing() {
        RemoteSandbox s = live.client.create(SandboxSpec.defaults());
        SandboxOnHost onHost = SandboxOnHost.of(s.id());
        s.start(Exec.command("sleep", "600"));
        s.pause();
        s.close();
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(onHost.remains()).isEmpty());
    }
}
