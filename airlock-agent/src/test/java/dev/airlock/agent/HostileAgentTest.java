package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent.AgentProcess;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A fake agent that breaks the protocol: the client must fail what is pending with an
 * IOException, without allocating what the peer asks for and without hanging.
 */
@Timeout(60)
class HostileAgentTest {

    @TempDir
    Path dir;
    private ServerSocketChannel listener;
    private SocketChannel fake;
    private DataInputStream fromClient;
    private CompletableFuture<SocketChannel> accepted;

    @BeforeEach
    void connect() throws Exception {
        listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        listener.bind(UnixDomainSocketAddress.of(dir.resolve("agent.sock")));
        accepted = CompletableFuture.supplyAsync(() -> {
            try {
                return listener.accept();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        fake = SocketChannel.open(UnixDomainSocketAddress.of(dir.resolve("agent.sock")));
        fromClient = new DataInputStream(Channels.newInputStream(fake));
    }

    @AfterEach
    void closeAll() throws IOException {
        fake.close();
        listener.close();
    }

    private AgentClient client() throws Exception {
        return AgentClient.connect(accepted.get(10, TimeUnit.SECONDS), Duration.ofSeconds(10));
    }

    private void send(int type, byte[] payload) throws IOException {
        ByteBuffer frame = ByteBuffer.allocate(5 + payload.length).putInt(1 + payload.length).put((byte) type).put(payload).flip();
        while (frame.hasRemaining()) {
            fake.write(frame);
        }
    }

    private void sendRaw(ByteBuffer bytes) throws IOException {
        while (bytes.hasRemaining()) {
            fake.write(bytes);
        }
    }

    private static byte[] ints(int... values) {
        ByteBuffer b = ByteBuffer.allocate(4 * values.length);
        for (int v : values) {
            b.putInt(v);
        }
        return b.array();
    }

    /** Reads one frame the client sent and answers STARTED, as a real agent would. */
    private AgentProcess startedProcess(AgentClient client) throws Exception {
        CompletableFuture<AgentProcess> started = CompletableFuture.supplyAsync(() -> {
            try {
                return client.start(ExecRequest.of("sleep", "100"), OutputListener.NONE);
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        int length = fromClient.readInt();
        byte[] frame = new byte[length];
        fromClient.readFully(frame);
        assertThat(frame[0]).isEqualTo((byte) Frame.EXEC);
        int id = ByteBuffer.wrap(frame, 1, 4).getInt();
        send(Frame.STARTED, ints(id, 4242));
        return started.get(10, TimeUnit.SECONDS);
    }

    @Test
    void aHugeLengthFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(1));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        sendRaw(ByteBuffer.allocate(4).putInt(0, Integer.MIN_VALUE));   // 2 GiB

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: frame length 2147483648");
        assertThat(client.isOpen()).isFalse();
    }

    @Test
    void aZeroLengthFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(1));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        sendRaw(ByteBuffer.allocate(4));

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation");
    }

    @Test
    void anUnknownFrameTypeFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(1));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(99, ints(1));

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: unknown frame type 99");
    }

    @Test
    void outputForAnUnknownIdFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(1));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(Frame.STDOUT, ints(777, 0x41414141));

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: frame type 12 for unknown id 777");
    }

    @Test
    void anExitOfTheWrongShapeFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(1));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(Frame.EXIT, ints(1, 0));   // the signal is missing

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation");
    }

    @Test
    void aWrongProtocolVersionIsRefused() throws Exception {
        send(Frame.HELLO, ints(2));

        assertThatThrownBy(this::client)
                .isInstanceOf(IOException.class)
                .hasMessageContaining("protocol version 2");
    }

    @Test
    void aSilentAgentTimesOut() throws Exception {
        SocketChannel channel = accepted.get(10, TimeUnit.SECONDS);

        assertThatThrownBy(() -> AgentClient.connect(channel, Duration.ofMillis(200)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("did not answer HELLO");
        assertThat(channel.isOpen()).isFalse();
    }

    @Test
    void sanitizesAgentMessages() {
        assertThat(AgentClient.sanitize("bad\u0000\n\u001b[31mname\u00e9")).isEqualTo("bad???[31mname?");
        assertThat(AgentClient.sanitize("x".repeat(500))).hasSize(200);
    }
}
