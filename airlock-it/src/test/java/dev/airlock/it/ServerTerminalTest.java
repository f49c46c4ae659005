package dev.airlock.it;

import dev.airlock.client.Airlock;
import dev.airlock.client.BackgroundProcess;
import dev.airlock.client.ConflictException;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.NotFoundException;
import dev.airlock.client.QuotaExceededException;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import dev.airlock.client.Terminal;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Processes on a pseudo-terminal through the real server, over real sockets: {@code exec} with
 * {@code "tty": true}, the WebSocket attach endpoint and the SDK's {@link Terminal}. A shell
 * answers typed input, reports its terminal, follows a resize, is interrupted by ^C and ends
 * with an exit message; another client cannot attach, a foreign Origin is refused before the
 * upgrade, an over-size message closes the socket, and the attach bounds hold.
 */
@Timeout(300)
class ServerTerminalTest {

    private static final String OTHER = "alk_terminal-other-0123456789abcdef0123456";
    private static final String POLICY = """
            profiles:
              default: {maxLimits: {timeoutSeconds: 600}}   # a terminal lives as long as its execution's timeout
            clients:
              local: {tokenFile: token, profiles: [default], allow: ["*"]}
              other:
                tokenSha256: %s
                profiles: [default]
                allow: ["*"]
            """.formatted(HexFormat.of().formatHex(Policy.sha256(OTHER)));
    private static final Duration AWAIT = Duration.ofSeconds(30);

    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.withPolicy(POLICY, c -> c.withPoolSize(0));
    }

    @AfterAll
    static void closeServer() {
        if (live != null) {
            live.close();
        }
    }

    /** What a terminal showed (its last 64 KiB: a flood is not kept). */
    private static final class Screen implements Terminal.Listener {
        private static final int KEPT = 64 * 1024;
        private final StringBuilder text = new StringBuilder();

        @Override
        public synchronized void output(byte[] bytes) {
            text.append(new String(bytes, StandardCharsets.UTF_8));
            if (text.length() > 2 * KEPT) {
                text.delete(0, text.length() - KEPT);
            }
        }

        synchronized String text() {
            return text.toString();
        }

        /** Its lines, without the control sequences bash's readline adds around its prompt (bracketed paste on and off). */
        java.util.stream.Stream<String> lines() {
            return Arrays.stream(text().replaceAll("\u001b\\[[0-9;?]*[a-zA-Z]", "").replace("\r", "").split("\n"));
        }

        /** Waits for a line that is {@code line}, after the prompt ({@code $ }) or not: the echo of typed input races the output. */
        void awaitLine(String line) throws InterruptedException {
            awaitLine(line, AWAIT);
        }

        void awaitLine(String line, Duration within) throws InterruptedException {
            long deadline = System.nanoTime() + within.toNanos();
            while (lines().noneMatch(l -> l.equals(line) || l.equals("$ " + line))) {
                assertThat(System.nanoTime()).as("waiting for the line %s; the terminal shows: %s", line, text()).isLessThan(deadline);
                Thread.sleep(20);
            }
        }
    }

    private static Exec shell() {
        return Exec.command("bash", "--norc", "--noprofile", "-i").env("PS1", "$ ").timeout(Duration.ofMinutes(3));
    }

    @Test
    void aShellOnATerminalOverTheSdk() throws Exception {
        try (RemoteSandbox s = live.client.create(SandboxSpec.defaults())) {
            Screen screen = new Screen();
            try (Terminal t = s.startTerminal(shell(), 24, 80, screen)) {
                assertThat(t.process().refresh().state()).isEqualTo("running");

                t.write("echo $((6*7))\n");
                screen.awaitLine("42");
                t.write("tty; echo $TERM\n");
                screen.awaitLine("xterm-256color");
                assertThat(screen.lines().anyMatch(l -> l.matches("/dev/pts/\\d+"))).as(screen.text()).isTrue();

                t.resize(50, 132);
                t.write("stty size\n");
                screen.awaitLine("50 132");

                t.write("sleep 100\n");
                Thread.sleep(1000);
                t.write(new byte[] {3});
                t.write("echo after-interrupt\n");
                screen.awaitLine("after-interrupt");

                t.write("exit 5\n");
                Optional<ExecResult> exit = t.awaitExit(AWAIT);
                assertThat(exit).as(screen.text()).isPresent();
                assertThat(exit.get().exitCode()).isEqualTo(5);
                assertThat(t.closeStatus()).contains(1000);
            }
            // the detach is recorded once the close handshake has completed on the server
            await().atMost(AWAIT).untilAsserted(() -> assertThat(live.audit(s.id(), AuditRecord.TERMINAL)).extracting(AuditRecord::detail)
                    .anySatisfy(d -> assertThat(d).contains("\"event\":\"attached\""))
                    .anySatisfy(d -> assertThat(d).contains("\"event\":\"detached\"").contains("\"status\":1000")));
        }
    }

    @Test
    void aTerminalProcessCanBeAttachedAgainAndKilled() throws Exception {
        try (RemoteSandbox s = live.client.create(SandboxSpec.defaults())) {
            Screen first = new Screen();
            Terminal t = s.startTerminal(shell(), 24, 80, first);
            t.write("X=kept\n");
            t.close();   // detaches; the shell runs on
            BackgroundProcess p = t.process();
            assertThat(p.refresh().isRunning()).isTrue();

            Screen second = new Screen();
            try (Terminal again = p.attach(second)) {
                again.write("echo $X\n");
                second.awaitLine("kept");
                p.kill();
                Optional<ExecResult> exit = again.awaitExit(AWAIT);
                assertThat(exit).isPresent();
                assertThat(exit.get().exitCode()).isEqualTo(137);
            }
        }
    }

    @Test
    void onlyTheOwnerMayAttachAndOnlyToARunningTerminal() throws Exception {
        try (RemoteSandbox s = live.client.create(SandboxSpec.defaults());
             Airlock other = Airlock.connect(live.uri(), OTHER)) {
            Screen screen = new Screen();
            try (Terminal t = s.startTerminal(shell(), 24, 80, screen)) {
                String path = "/v1/sandboxes/" + s.id() + "/processes/" + t.process().id() + "/attach";
                assertThat(handshakeStatus(path, OTHER, null)).as("another client's sandbox is as if it did not exist").isEqualTo(404);
                assertThat(handshakeStatus(path, null, null)).isEqualTo(401);
                assertThat(handshakeStatus(path, live.token(), "http://evil.example")).as("a foreign Origin").isEqualTo(403);
                assertThat(handshakeStatus(path, live.token(), "http://" + live.uri().getHost() + ":1"))
                        .as("another port of this host is another origin").isEqualTo(403);
                assertThat(handshakeStatus(path, live.token(), "http://" + live.uri().getHost() + ":" + live.uri().getPort()))
                        .as("this server's own origin").isEqualTo(101);
                assertThat(live.raw("GET", path, null).statusCode()).as("not a WebSocket handshake").isEqualTo(400);
                assertThatThrownBy(() -> other.get(s.id())).isInstanceOf(NotFoundException.class);
            }
            BackgroundProcess plain = s.start(Exec.command("sleep", "100"));
            assertThatThrownBy(() -> plain.attach(b -> { })).isInstanceOf(ConflictException.class).hasMessageContaining("has no terminal");
            plain.kill();

            var refused = live.raw("POST", "/v1/sandboxes/" + s.id() + "/exec", "{\"command\":[\"sh\"],\"tty\":true}");
            assertThat(refused.statusCode()).isEqualTo(400);
            assertThat(refused.body()).contains("needs \\\"background\\\": true");
            assertThat(live.raw("POST", "/v1/sandboxes/" + s.id() + "/exec",
                    "{\"command\":[\"sh\"],\"tty\":true,\"background\":true,\"rows\":0}").statusCode()).isEqualTo(400);
        }
    }

    @Test
    void anOversizeMessageClosesTheSocketAndTheAttachBoundsHold() throws Exception {
        try (RemoteSandbox s = live.client.create(SandboxSpec.defaults())) {
            Screen screen = new Screen();
            try (Terminal t = s.startTerminal(shell(), 24, 80, screen)) {
                String path = "/v1/sandboxes/" + s.id() + "/processes/" + t.process().id() + "/attach";
                // three more sockets make four on the process: the fifth is refused before the upgrade
                List<Terminal> more = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    more.add(t.process().attach(b -> { }));
                }
                assertThatThrownBy(() -> t.process().attach(b -> { })).isInstanceOf(QuotaExceededException.class)
                        .hasMessageContaining("already has 4 WebSockets attached");
                more.forEach(Terminal::close);

                Closing raw = new Closing();
                WebSocket ws = HttpClient.newHttpClient().newWebSocketBuilder().header("Authorization", "Bearer " + live.token())
                        .buildAsync(wsUri(path), raw).get(30, TimeUnit.SECONDS);
                ws.sendBinary(ByteBuffer.wrap(new byte[64 * 1024 + 1]), true);
                assertThat(raw.status.get(30, TimeUnit.SECONDS)).as("closed for a message too big").isEqualTo(1009);

                Closing bad = new Closing();
                WebSocket ws2 = HttpClient.newHttpClient().newWebSocketBuilder().header("Authorization", "Bearer " + live.token())
                        .buildAsync(wsUri(path), bad).get(30, TimeUnit.SECONDS);
                ws2.sendText("{\"type\":\"launch\"}", true);
                assertThat(bad.status.get(30, TimeUnit.SECONDS)).as("closed for an unknown control").isEqualTo(1008);
                assertThat(bad.reason).contains("unknown control message type");

                // the process itself is untouched by its sockets' ends
                t.write("echo still-here\n");
                screen.awaitLine("still-here");
            }
        }
    }

    @Test
    void outputAClientDoesNotTakeIsDroppedForItNotBuffered() throws Exception {
        try (RemoteSandbox s = live.client.create(SandboxSpec.defaults())) {
            Screen screen = new Screen();
            try (Terminal t = s.startTerminal(shell(), 24, 80, screen)) {
                String path = "/v1/sandboxes/" + s.id() + "/processes/" + t.process().id() + "/attach";
                // a socket that never asks for a message: its TCP window fills, then its 1 MiB of pending output
                Closing stalledEnd = new Closing();
                WebSocket stalled = HttpClient.newHttpClient().newWebSocketBuilder().header("Authorization", "Bearer " + live.token())
                        .buildAsync(wsUri(path), new WebSocket.Listener() {
                            @Override
                            public void onOpen(WebSocket ws) {
                                // no request(1): nothing is read
                            }
                        }).get(30, TimeUnit.SECONDS);
                t.write("head -c 32000000 /dev/zero | tr '\\0' x; echo; echo flooded\n");
                // the reader that does read gets to the end, whatever the stalled one does
                screen.awaitLine("flooded", Duration.ofSeconds(120));
                t.write("echo reader-unharmed\n");
                screen.awaitLine("reader-unharmed");
                String described = live.raw("GET", "/v1/sandboxes/" + s.id() + "/processes/" + t.process().id(), null).body();
                java.util.regex.Matcher stored = java.util.regex.Pattern.compile("\"stdoutBytes\":(\\d+)").matcher(described);
                assertThat(stored.find()).as(described).isTrue();
                assertThat(Long.parseLong(stored.group(1))).as("the output is in the process's file, up to the output limits").isPositive();
                assertThat(described).contains("\"tty\":true");
                stalled.abort();
                await().atMost(AWAIT).untilAsserted(() -> assertThat(live.audit(s.id(), AuditRecord.TERMINAL)).extracting(AuditRecord::detail)
                        .filteredOn(d -> d.contains("\"event\":\"detached\"")).isNotEmpty());
            }
        }
    }

    /** Records how a raw socket closed. */
    private static final class Closing implements WebSocket.Listener {
        final CompletableFuture<Integer> status = new CompletableFuture<>();
        volatile String reason = "";

        @Override
        public CompletionStage<?> onClose(WebSocket ws, int statusCode, String why) {
            reason = why;
            status.complete(statusCode);
            return null;
        }

        @Override
        public void onError(WebSocket ws, Throwable error) {
            status.complete(-1);
        }
    }

    private static URI wsUri(String path) {
        return URI.create(live.uri().toString().replaceFirst("^http", "ws") + path);
    }

    /** The status of a WebSocket handshake to {@code path} (101 when it opened). */
    private static int handshakeStatus(String path, String token, String origin) throws Exception {
        WebSocket.Builder b = HttpClient.newHttpClient().newWebSocketBuilder();
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (origin != null) {
            b.header("Origin", origin);
        }
        try {
            WebSocket ws = b.buildAsync(wsUri(path), new WebSocket.Listener() { }).get(30, TimeUnit.SECONDS);
            ws.sendClose(WebSocket.NORMAL_CLOSURE, "").get(30, TimeUnit.SECONDS);
            return 101;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof WebSocketHandshakeException h) {
                HttpResponse<?> r = h.getResponse();
                return r.statusCode();
            }
            throw e;
        }
    }
}
