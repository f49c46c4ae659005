package dev.airlock.it;

import dev.airlock.client.ExecResult;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.server.audit.AuditRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Hostile tests of abandoned plain REST execs: a client that sends a long execution and goes away
 * (closes, or resets its connection) must not leave the process running to its timeout.
 */
class ServerAbandonedExecTest {

    private static LiveServer live;
    private static RemoteSandbox sandbox;

    @BeforeAll
    static void startServer() {
        live = LiveServer.withPolicy("""
                profiles:
                  default:
                    limits: {timeoutSeconds: 900}
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
                """, c -> c);
        sandbox = live.client.create();
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    @Test
    void aPlainExecWhoseClientClosesIsKilledWithinSeconds() throws Exception {
        abandonSleep("600", false);
    }

    @Test
    void aPlainExecWhoseClientResetsIsKilledWithinSeconds() throws Exception {
        abandonSleep("601", true);
    }

    @Test
    void aPlainExecWhoseClientWaitsGetsItsResult() {
        // longer than the watcher's select period, so a watch that fired without a disconnect would show here
        ExecResult r = sandbox.exec("sh", "-c", "sleep 2.5; echo still here");
        assertThat(r.exitCode()).isZero();
        assertThat(r.stdout()).isEqualTo("still here\n");
    }

    /** Starts {@code sleep <seconds>} with a plain exec on a raw socket, leaves, and waits for it to be gone. */
    private void abandonSleep(String seconds, boolean reset) throws Exception {
        long resultsBefore = cancelledResults();
        String body = "{\"command\": [\"sleep\", \"" + seconds + "\"], \"timeoutSeconds\": 900}";
        try (Socket s = new Socket(live.uri().getHost(), live.uri().getPort())) {
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            OutputStream out = s.getOutputStream();
            out.write(("POST /v1/sandboxes/" + sandbox.id() + "/exec HTTP/1.1\r\nHost: " + live.uri().getAuthority()
                    + "\r\nAuthorization: Bearer " + live.token() + "\r\nContent-Type: application/json\r\nContent-Length: " + b.length
                    + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.write(b);
            out.flush();
            await().atMost(Duration.ofSeconds(20)).until(() -> sleeping(seconds));
            if (reset) {
                s.setSoLinger(true, 0);
            }
        }
        long left = System.nanoTime();
        await().atMost(Duration.ofSeconds(10)).until(() -> !sleeping(seconds));
        System.out.printf("abandoned exec (%s) gone after %d ms%n", reset ? "reset" : "closed", (System.nanoTime() - left) / 1_000_000);
        await().atMost(Duration.ofSeconds(10)).until(() -> cancelledResults() > resultsBefore);
    }

    /** Whether {@code sleep <seconds>} runs in the sandbox. */
    private static boolean sleeping(String seconds) {
        ExecResult ps = sandbox.exec("sh", "-c", "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done");
        return ps.stdout().lines().anyMatch(l -> l.equals("sleep " + seconds + " "));
    }

    private static long cancelledResults() {
        return live.audit(sandbox.id(), AuditRecord.RESULT).stream().filter(r -> r.detail().contains("\"endReason\":\"cancelled\"")).count();
    }
}
