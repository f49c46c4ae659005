package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.PortConnection;
import dev.airlock.core.SandboxAgent.ProcessExit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Port streams (protocol version 6: PORT_OPEN and the credit-bounded frames after it), with the
 * real agent binary run on the host: it connects to servers on the host's loopback here, as it
 * does to the sandbox's loopback in a sandbox.
 */
@Timeout(120)
class AgentPortsTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "LC_ALL", "C");
    private static final Duration AWAIT = Duration.ofSeconds(30);

    /**
     * A threaded echo server on 127.0.0.1 (a free port, printed first): echoes every connection
     * until its end of input, then sends "bye" and closes.
     */
    private static final String ECHO_SERVER = """
            import socket, threading
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(64)
            print(s.getsockname()[1], flush=True)
            def echo(c):
                while True:
                    d = c.recv(65536)
                    if not d:
                        break
                    c.sendall(d)
                c.sendall(b"bye")
                c.close()
            while True:
                c, _ = s.accept()
                threading.Thread(target=echo, args=(c,), daemon=True).start()
            """;

    @TempDir
    Path dir;
    private RealAgent agent;

    @BeforeEach
    void startAgent() throws Exception {
        agent = RealAgent.start(dir);
    }

    @AfterEach
    void stopAgent() throws Exception {
        agent.close();
    }

    /** Starts the echo server through the agent and returns its port. */
    private int startEchoServer() throws Exception {
        Output output = new Output();
        agent.client.start(new ExecRequest(List.of("python3", "-c", ECHO_SERVER), ENV, "/", null, null, null), output);
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (!output.stdout().contains("\n")) {
            assertThat(System.nanoTime()).as("the echo server's port; stderr: %s", output.stderr()).isLessThan(deadline);
            Thread.sleep(20);
        }
        return Integer.parseInt(output.stdout().trim());
    }

    private static String readAll(InputStream in) throws IOException {
        return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }

    @Test
    void echoesBothWaysAndHalfClosesEachDirection() throws Exception {
        int port = startEchoServer();
        try (PortConnection connection = agent.client.connect(port)) {
            connection.output().write("hello".getBytes(StandardCharsets.UTF_8));
            assertThat(new String(connection.input().readNBytes(5), StandardCharsets.UTF_8)).isEqualTo("hello");

            connection.output().write("more".getBytes(StandardCharsets.UTF_8));
            connection.output().close();   // the server reads its end of input, says bye and closes
            assertThat(readAll(connection.input())).isEqualTo("morebye");
            assertThat(connection.input().read()).isEqualTo(-1);
            assertThatThrownBy(() -> connection.output().write(1)).isInstanceOf(IOException.class);
        }
    }

    @Test
    void carriesFiveMegabytesBothWaysToASlowReaderHoldingOneWindowAtMost() throws Exception {
        int port = startEchoServer();
        byte[] payload = new byte[5 * 1024 * 1024];
        new Random(17).nextBytes(payload);
        try (PortConnection slow = agent.client.connect(port)) {
            CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
                try (OutputStream out = slow.output()) {
                    for (int off = 0; off < payload.length; off += 100_000) {
                        out.write(payload, off, Math.min(100_000, payload.length - off));
                    }
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            // Stall the reader: the agent stops reading the server once this side's window is full (the
            // echo then waits, and the writer waits for credit, once the kernel's loopback buffers,
            // which may take megabytes, are full); this side never holds more than the window.
            Thread.sleep(1500);
            assertThat(slow.input().available()).isLessThanOrEqualTo(Frame.PORT_WINDOW);

            // The stalled stream holds back only itself: another stream and an execution still flow.
            try (PortConnection other = agent.client.connect(port)) {
                other.output().write("ping".getBytes(StandardCharsets.UTF_8));
                other.output().close();
                assertThat(readAll(other.input())).isEqualTo("pingbye");
            }
            Output output = new Output();
            ProcessExit exit = agent.client.start(new ExecRequest(List.of("echo", "alive"), ENV, "/", null, null, null), output).await(AWAIT);
            assertThat(exit).isEqualTo(new ProcessExit(0, 0, null));
            assertThat(output.stdout()).isEqualTo("alive\n");

            // Now read slowly, checking that never more than one window waits on this side.
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            byte[] buffer = new byte[8192];
            long total = 0;
            int reads = 0;
            while (total < payload.length) {
                assertThat(slow.input().available()).isLessThanOrEqualTo(Frame.PORT_WINDOW);
                int n = slow.input().read(buffer, 0, (int) Math.min(buffer.length, payload.length - total));
                assertThat(n).isPositive();
                digest.update(buffer, 0, n);
                total += n;
                if (++reads % 64 == 0 && total < 1024 * 1024) {
                    Thread.sleep(10);
                }
            }
            assertThat(digest.digest()).isEqualTo(MessageDigest.getInstance("SHA-256").digest(payload));
            writer.get(AWAIT.toSeconds(), TimeUnit.SECONDS);
            assertThat(readAll(slow.input())).isEqualTo("bye");
        }
    }

    @Test
    void aPortNobodyListensOnIsRefusedClearly() throws Exception {
        int free;
        try (ServerSocket probe = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            free = probe.getLocalPort();
        }
        assertThatThrownBy(() -> agent.client.connect(free))
                .isInstanceOfSatisfying(PortConnection.RefusedException.class, e -> assertThat(e.errno()).isEqualTo("ECONNREFUSED"))
                .hasMessage("cannot connect to port " + free + " in the sandbox: nothing listens on 127.0.0.1:" + free + " (ECONNREFUSED)");
        assertThatThrownBy(() -> agent.client.connect(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1..65535");
        assertThatThrownBy(() -> agent.client.connect(65536)).isInstanceOf(IllegalArgumentException.class);
        assertThat(agent.client.isOpen()).isTrue();
    }

    @Test
    void refusesTheThirtyThirdStreamUntilOneCloses() throws Exception {
        int port = startEchoServer();
        List<PortConnection> open = new ArrayList<>();
        try {
            for (int i = 0; i < 32; i++) {
                open.add(agent.client.connect(port));
            }
            assertThatThrownBy(() -> agent.client.connect(port))
                    .isInstanceOfSatisfying(PortConnection.RefusedException.class, e -> assertThat(e.errno()).isEqualTo("EMFILE"))
                    .hasMessageContaining("32 port connections are open already");
            // Every one of them works, and closing one (a RESET inside) makes room.
            for (PortConnection c : open) {
                c.output().write('x');
                assertThat(c.input().read()).isEqualTo('x');
            }
            open.removeFirst().close();
            try (PortConnection again = awaitConnect(port)) {
                again.output().close();
                assertThat(readAll(again.input())).isEqualTo("bye");
            }
        } finally {
            open.forEach(PortConnection::close);
        }
    }

    /** The agent frees a slot when it handles the RESET, a little after close() returned. */
    private PortConnection awaitConnect(int port) throws Exception {
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (true) {
            try {
                return agent.client.connect(port);
            } catch (PortConnection.RefusedException e) {
                if (!e.errno().equals("EMFILE") || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(20);
            }
        }
    }

    @Test
    void closingTheAgentChannelEndsOpenStreams() throws Exception {
        int port = startEchoServer();
        PortConnection connection = agent.client.connect(port);
        connection.output().write("a".getBytes(StandardCharsets.UTF_8));
        assertThat(connection.input().read()).isEqualTo('a');
        CompletableFuture<Integer> blockedRead = CompletableFuture.supplyAsync(() -> {
            try {
                return connection.input().read();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });

        agent.client.close();

        assertThatThrownBy(() -> blockedRead.get(10, TimeUnit.SECONDS)).hasRootCauseMessage("the connection to the agent was closed");
        assertThatThrownBy(() -> connection.output().write(1)).isInstanceOf(IOException.class)
                .hasMessageContaining("the connection to port " + port + " in the sandbox ended");
        assertThatThrownBy(() -> agent.client.connect(port)).isInstanceOf(IOException.class);
        connection.close();
    }
}
