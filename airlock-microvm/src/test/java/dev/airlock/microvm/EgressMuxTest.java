package dev.airlock.microvm;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The host end of the egress bridge against a fake agent (this test, speaking the frames) and a
 * fake egress proxy (an echo server that answers {@code bridged <what it read>} at the end of its
 * input): bytes both ways with credits, half-close, and the bounds a hostile guest meets.
 */
class EgressMuxTest {

    @TempDir
    Path dir;
    private ServerSocketChannel proxy;
    private SocketChannel agent;
    private EgressMux mux;

    @BeforeEach
    void start() throws Exception {
        // the egress proxy's backlog: as many as the bridge's connections (a full backlog refuses a connect from a virtual thread)
        proxy = ServerSocketChannel.open(StandardProtocolFamily.UNIX).bind(UnixDomainSocketAddress.of(dir.resolve("egress.sock")),
                EgressMux.MAX_CONNECTIONS);
        Thread.ofVirtual().start(this::serveProxy);
        ServerSocketChannel port = ServerSocketChannel.open(StandardProtocolFamily.UNIX).bind(UnixDomainSocketAddress.of(dir.resolve("port")));
        agent = SocketChannel.open(UnixDomainSocketAddress.of(dir.resolve("port")));
        mux = new EgressMux(port.accept(), dir.resolve("egress.sock"), "test");
        port.close();
    }

    @AfterEach
    void stop() throws IOException {
        mux.close();
        agent.close();
        proxy.close();
    }

    /** Each connection: reads to its end, then answers "bridged " and what it read, and closes. */
    private void serveProxy() {
        while (true) {
            SocketChannel c;
            try {
                c = proxy.accept();
            } catch (IOException e) {
                return;
            }
            Thread.ofVirtual().start(() -> {
                try (c) {
                    ByteArrayOutputStream read = new ByteArrayOutputStream();
                    ByteBuffer b = ByteBuffer.allocate(8192);
                    while (c.read(b.clear()) >= 0) {
                        read.write(b.array(), 0, b.position());
                    }
                    c.write(ByteBuffer.wrap(("bridged " + read.toString(StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8)));
                } catch (IOException ignored) {
                    // the test closed it
                }
            });
        }
    }

    private void send(int type, int id, byte[] payload) throws IOException {
        ByteBuffer f = ByteBuffer.allocate(9 + payload.length).putInt(5 + payload.length).put((byte) type).putInt(id).put(payload).flip();
        while (f.hasRemaining()) {
            agent.write(f);
        }
    }

    /** The next frame from the host: type, id and payload; null once the host closed the port. */
    private Frame receive() throws IOException {
        ByteBuffer header = ByteBuffer.allocate(9);
        if (!readFully(header)) {
            return null;
        }
        header.flip();
        int length = header.getInt();
        int type = header.get();
        int id = header.getInt();
        ByteBuffer payload = ByteBuffer.allocate(length - 5);
        readFully(payload);
        return new Frame(type, id, payload.array());
    }

    private boolean readFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (agent.read(b) < 0) {
                return false;
            }
        }
        return true;
    }

    private record Frame(int type, int id, byte[] payload) {
        String text() {
            return new String(payload, StandardCharsets.UTF_8);
        }
    }

    @Test
    void bytesGoBothWaysWithCreditsAndHalfCloseAndTheConnectionEndsWithBothDirections() throws Exception {
        send(EgressMux.OPEN, 1, new byte[0]);
        send(EgressMux.DATA, 1, "hello".getBytes(StandardCharsets.UTF_8));
        send(EgressMux.EOF, 1, new byte[0]);

        StringBuilder answer = new StringBuilder();
        long credited = 0;
        boolean ended = false;
        while (!ended) {
            Frame f = receive();
            assertThat(f).isNotNull();
            assertThat(f.id()).isEqualTo(1);
            switch (f.type()) {
                case EgressMux.CREDIT -> credited += ByteBuffer.wrap(f.payload()).getInt();
                case EgressMux.DATA -> answer.append(f.text());
                case EgressMux.EOF -> ended = true;
                default -> throw new AssertionError("unexpected frame type " + f.type());
            }
        }
        assertThat(answer.toString()).isEqualTo("bridged hello");
        assertThat(credited).isEqualTo(5);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (mux.liveConnections() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(mux.liveConnections()).as("a connection whose both directions ended").isZero();
    }

    /**
     * The guest resets connections whose answers the host is writing to it (a client that went away
     * mid-answer, as a flood of short requests does all the time): only those connections end. The
     * port stays up, so the next connection is bridged. (Closing a connection once interrupted its
     * threads, and an interrupt during a write to the port closed the port itself: the agent then
     * died with every connection of the guest.)
     */
    @Test
    void resettingConnectionsWhileTheHostWritesToThePortEndsOnlyThem() throws Exception {
        int connections = 8;
        byte[] chunk = new byte[EgressMux.MAX_CHUNK];
        for (int id = 1; id <= connections; id++) {
            send(EgressMux.OPEN, id, new byte[0]);
            for (int sent = 0; sent + chunk.length <= EgressMux.WINDOW; sent += chunk.length) {
                send(EgressMux.DATA, id, chunk);
            }
            send(EgressMux.EOF, id, new byte[0]);
        }
        // Not read meanwhile: eight answers of a window each fill the port, and the host's writers wait in it.
        Thread.sleep(1000);
        for (int id = 1; id <= connections; id++) {
            send(EgressMux.RESET, id, new byte[0]);
        }
        send(EgressMux.OPEN, connections + 1, new byte[0]);
        send(EgressMux.DATA, connections + 1, "hello".getBytes(StandardCharsets.UTF_8));
        send(EgressMux.EOF, connections + 1, new byte[0]);

        StringBuilder answer = new StringBuilder();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        boolean ended = false;
        while (!ended && System.nanoTime() < deadline) {
            Frame f = receive();
            assertThat(f).as("the host closed the port: the resets ended the whole bridge").isNotNull();
            if (f.id() == connections + 1 && f.type() == EgressMux.DATA) {
                answer.append(f.text());
            }
            ended = f.id() == connections + 1 && f.type() == EgressMux.EOF;
        }
        assertThat(answer.toString()).isEqualTo("bridged hello");
    }

    @Test
    void anOpenBeyondTheBoundIsReset() throws Exception {
        for (int id = 1; id <= EgressMux.MAX_CONNECTIONS + 1; id++) {
            send(EgressMux.OPEN, id, new byte[0]);
        }
        Frame f = receive();
        assertThat(f.type()).isEqualTo(EgressMux.RESET);
        assertThat(f.id()).isEqualTo(EgressMux.MAX_CONNECTIONS + 1);
        assertThat(mux.liveConnections()).isEqualTo(EgressMux.MAX_CONNECTIONS);
    }

    @Test
    void aCreditBeyondTheWindowEndsTheBridge() throws Exception {
        send(EgressMux.OPEN, 1, new byte[0]);
        // The host has sent nothing yet: its whole window is still its credit, and one byte more is a lie.
        send(EgressMux.CREDIT, 1, ByteBuffer.allocate(4).putInt(0, 1).array());
        assertThat(drainToEnd()).as("the host closed the port").isTrue();
        assertThat(mux.liveConnections()).isZero();
    }

    @Test
    void aReusedIdEndsTheBridge() throws Exception {
        send(EgressMux.OPEN, 2, new byte[0]);
        send(EgressMux.OPEN, 1, new byte[0]);
        assertThat(drainToEnd()).isTrue();
    }

    @Test
    void anOversizedFrameEndsTheBridge() throws Exception {
        send(EgressMux.OPEN, 1, new byte[0]);
        send(EgressMux.DATA, 1, new byte[EgressMux.MAX_CHUNK + 1]);
        assertThat(drainToEnd()).isTrue();
    }

    /**
     * Reads frames until the host closes the port; whether it did within 10 s. A reset counts: the host
     * closed the port with bytes of ours still unread.
     */
    private boolean drainToEnd() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            try {
                if (receive() == null) {
                    return true;
                }
            } catch (java.net.SocketException e) {
                return true;
            }
        }
        return false;
    }
}
