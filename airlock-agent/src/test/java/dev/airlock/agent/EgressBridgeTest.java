package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.SandboxAgent.ProcessExit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The agent's egress bridge (--egress-port): TCP on 127.0.0.1/::1 spliced to a unix socket. The
 * host side here is a fake: a unix echo server (or a sink that never reads).
 */
@Timeout(120)
class EgressBridgeTest {

    @TempDir
    Path dir;
    private RealAgent agent;
    private ServerSocketChannel host;
    private final List<SocketChannel> accepted = new CopyOnWriteArrayList<>();
    private final AtomicInteger hostConnections = new AtomicInteger();
    private int port;

    enum Mode { ECHO, SINK }

    @AfterEach
    void stop() throws Exception {
        if (agent != null) {
            agent.close();
        }
        if (host != null) {
            host.close();
        }
        for (SocketChannel c : accepted) {
            c.close();
        }
    }

    private void start(Mode mode, boolean withHost) throws Exception {
        Path socket = dir.resolve("egress.sock");
        if (withHost) {
            host = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            host.bind(UnixDomainSocketAddress.of(socket), 200);
            Thread.ofVirtual().start(() -> serve(mode));
        }
        port = freePort();
        agent = RealAgent.start(dir, "--egress-port", String.valueOf(port), "--egress-socket", socket.toString());
    }

    private void serve(Mode mode) {
        while (host.isOpen()) {
            try {
                SocketChannel c = host.accept();
                accepted.add(c);
                hostConnections.incrementAndGet();
                if (mode == Mode.ECHO) {
                    Thread.ofVirtual().start(() -> echo(c));
                }
            } catch (IOException e) {
                return;
            }
        }
    }

    private static void echo(SocketChannel c) {
        ByteBuffer buf = ByteBuffer.allocate(16 * 1024);
        try (c) {
            while (c.read(buf) > 0) {
                buf.flip();
                while (buf.hasRemaining()) {
                    c.write(buf);
                }
                buf.clear();
            }
            c.shutdownOutput();
        } catch (IOException e) {
            // peer gone
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private Socket connect(String address) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(InetAddress.ofLiteral(address), port), 5000);
        s.setSoTimeout(30_000);
        return s;
    }

    @Test
    void splicesTcpToTheHostSocketBothWays() throws Exception {
        start(Mode.ECHO, true);
        try (Socket s = connect("127.0.0.1")) {
            s.getOutputStream().write("hello".getBytes());
            assertThat(new String(s.getInputStream().readNBytes(5))).isEqualTo("hello");
            // Half-close: the host sees the end, answers with its own, and we read it.
            s.shutdownOutput();
            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
        assertThat(hostConnections.get()).isEqualTo(1);
    }

    @Test
    void listensOnIpv6LoopbackToo() throws Exception {
        start(Mode.ECHO, true);
        Socket s;
        try {
            s = connect("::1");
        } catch (SocketException e) {
            org.junit.jupiter.api.Assumptions.abort("no IPv6 loopback on this host: " + e.getMessage());
            return;
        }
        try (s) {
            s.getOutputStream().write("six".getBytes());
            assertThat(new String(s.getInputStream().readNBytes(3))).isEqualTo("six");
        }
    }

    @Test
    void largeTransfersArriveIntactUnderBackpressure() throws Exception {
        start(Mode.ECHO, true);
        long n = 32L << 20;
        try (Socket s = connect("127.0.0.1")) {
            MessageDigest sent = MessageDigest.getInstance("SHA-256");
            Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    Random random = new Random(7);
                    byte[] buf = new byte[50_000];
                    OutputStream out = s.getOutputStream();
                    for (long off = 0; off < n; off += buf.length) {
                        int len = (int) Math.min(buf.length, n - off);
                        random.nextBytes(buf);
                        sent.update(buf, 0, len);
                        out.write(buf, 0, len);
                    }
                    s.shutdownOutput();
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            // A slow reader: the agent must stop reading from us rather than buffer everything.
            MessageDigest back = MessageDigest.getInstance("SHA-256");
            InputStream in = s.getInputStream();
            byte[] buf = new byte[8192];
            long total = 0;
            int reads = 0;
            for (int r; (r = in.read(buf)) > 0; ) {
                back.update(buf, 0, r);
                total += r;
                if (++reads % 500 == 0) {
                    Thread.sleep(5);
                }
            }
            writer.join();
            assertThat(total).isEqualTo(n);
            assertThat(back.digest()).isEqualTo(sent.digest());
        }
    }

    @Test
    void manyConnectionsAtOnce() throws Exception {
        start(Mode.ECHO, true);
        List<Thread> threads = new ArrayList<>();
        AtomicInteger ok = new AtomicInteger();
        for (int i = 0; i < 40; i++) {
            int k = i;
            threads.add(Thread.ofVirtual().start(() -> {
                try (Socket s = connect(k % 2 == 0 ? "127.0.0.1" : "127.0.0.1")) {
                    byte[] msg = ("message " + k).repeat(1000).getBytes();
                    s.getOutputStream().write(msg);
                    s.shutdownOutput();
                    if (java.util.Arrays.equals(s.getInputStream().readAllBytes(), msg)) {
                        ok.incrementAndGet();
                    }
                } catch (IOException e) {
                    // counted as not ok
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        assertThat(ok.get()).isEqualTo(40);
    }

    @Test
    void aStalledConnectionDoesNotStallTheAgent() throws Exception {
        start(Mode.SINK, true);
        try (Socket s = connect("127.0.0.1")) {
            // The host never reads: fill every buffer on the way until our writes would block.
            Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    byte[] buf = new byte[64 * 1024];
                    while (true) {
                        s.getOutputStream().write(buf);
                    }
                } catch (IOException e) {
                    // closed at the end of the test
                }
            });
            Thread.sleep(500);
            assertThat(writer.isAlive()).as("the writer is blocked by backpressure").isTrue();
            ExecRequest echo = new ExecRequest(List.of("sh", "-c", "echo still here"), Map.of("PATH", "/usr/bin:/bin"), "/", null, null);
            Output output = new Output();
            ProcessExit exit = agent.client.start(echo, output).await(Duration.ofSeconds(10));
            assertThat(exit).isNotNull();
            assertThat(output.stdout()).isEqualTo("still here\n");
            s.close();
            writer.join(5000);
        }
    }

    @Test
    void whenTheHostSocketIsAbsentConnectionsCloseAtOnce() throws Exception {
        start(Mode.ECHO, false);
        try (Socket s = connect("127.0.0.1")) {
            try {
                s.getOutputStream().write("x".getBytes());
                assertThat(s.getInputStream().read()).isEqualTo(-1);
            } catch (SocketException e) {
                // reset: also a refusal
            }
        }
    }

    @Test
    void theHostClosingEndsTheConnection() throws Exception {
        start(Mode.SINK, true);
        try (Socket s = connect("127.0.0.1")) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (accepted.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            accepted.getFirst().close();
            assertThat(s.getInputStream().read()).isEqualTo(-1);
        }
    }

    @Test
    void connectionsBeyondTheSlotLimitAreClosed() throws Exception {
        start(Mode.ECHO, true);
        List<Socket> open = new ArrayList<>();
        try {
            for (int i = 0; i < 64; i++) {
                Socket s = connect("127.0.0.1");
                open.add(s);
                s.getOutputStream().write(1);
                assertThat(s.getInputStream().read()).isEqualTo(1);
            }
            try (Socket extra = connect("127.0.0.1")) {
                try {
                    extra.getOutputStream().write(1);
                    assertThat(extra.getInputStream().read()).isEqualTo(-1);
                } catch (SocketException e) {
                    // reset: also a refusal
                }
            }
        } finally {
            for (Socket s : open) {
                s.close();
            }
        }
        // Slots come back.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try (Socket s = connect("127.0.0.1")) {
                s.getOutputStream().write(2);
                if (s.getInputStream().read() == 2) {
                    break;
                }
            } catch (SocketException e) {
                // not yet
            }
            assertThat(System.nanoTime()).as("a slot is free again").isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    @Test
    void rejectsABadPort() throws Exception {
        Path binary = AgentBinary.installTo(dir);
        Process p = new ProcessBuilder(binary.toString(), "--egress-port", "70000", dir.resolve("agent.sock").toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).isEqualTo(2);
        assertThat(out).contains("--egress-port");
    }
}
