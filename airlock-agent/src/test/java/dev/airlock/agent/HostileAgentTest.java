package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent.AgentProcess;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileOperationException;
import dev.airlock.core.SandboxAgent.FileTooLargeException;
import dev.airlock.core.SandboxAgent.FileType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertThrows;

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

    /** A FORKED for an execution that was not held would let a lying agent skip the host's placement: refused. */
    @Test
    void forkedForAnExecutionThatWasNotHeldClosesTheConnection() throws Exception {
        assertFrameForAPlainExecutionClosesTheConnection(Frame.FORKED);
    }

    /**
     * A NEXT_SPARE for an execution that was not started in a spare would have the host place a
     * process the agent names at will: refused.
     */
    @Test
    void nextSpareForAnExecutionNotStartedInASpareClosesTheConnection() throws Exception {
        assertFrameForAPlainExecutionClosesTheConnection(Frame.NEXT_SPARE);
    }

    /** Frame {@code type} naming pid 4242 for execution 1, started with a plain EXEC, breaks the connection and the execution. */
    private void assertFrameForAPlainExecutionClosesTheConnection(int type) throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(type, ints(1, 4242));

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: frame type " + type + " does not fit the state of request 1");
        assertThat(client.isOpen()).isFalse();
    }

    /**
     * A held execution's STARTED names the command, the child of the supervisor FORKED named and the
     * host placed: one naming the supervisor itself is a lie about what runs where. The connection is
     * given up, the start fails.
     */
    @Test
    void startedNamingTheSupervisorClosesTheConnection() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        java.util.List<Integer> placed = new java.util.concurrent.CopyOnWriteArrayList<>();
        CompletableFuture<AgentProcess> started = CompletableFuture.supplyAsync(() -> {
            try {
                return client.start(ExecRequest.of("sleep", "100"), OutputListener.NONE, placed::add);
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        int length = fromClient.readInt();
        byte[] frame = new byte[length];
        fromClient.readFully(frame);
        assertThat(frame[0]).isEqualTo((byte) Frame.EXEC_HELD);
        int id = ByteBuffer.wrap(frame, 1, 4).getInt();
        send(Frame.FORKED, ints(id, 4242));
        length = fromClient.readInt();
        frame = new byte[length];
        fromClient.readFully(frame);
        assertThat(frame[0]).as("RELEASE after the placement").isEqualTo((byte) Frame.RELEASE);
        assertThat(placed).containsExactly(4242);

        send(Frame.STARTED, ints(id, 4242));

        assertThatThrownBy(() -> started.get(10, TimeUnit.SECONDS)).hasRootCauseInstanceOf(AgentProtocolException.class)
                .rootCause().hasMessageContaining("frame type 11 does not fit the state of request " + id);
        assertThat(client.isOpen()).isFalse();
    }

    /** Reads the PORT_OPEN the client sends for {@code connect} and returns its id. */
    private int portOpenId(int port) throws IOException {
        int length = fromClient.readInt();
        byte[] frame = new byte[length];
        fromClient.readFully(frame);
        assertThat(frame[0]).isEqualTo((byte) Frame.PORT_OPEN);
        assertThat(ByteBuffer.wrap(frame, 5, 4).getInt()).isEqualTo(port);
        return ByteBuffer.wrap(frame, 1, 4).getInt();
    }

    private static CompletableFuture<dev.airlock.core.PortConnection> connectAsync(AgentClient client, int port) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return client.connect(port);
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
    }

    /** The host holds at most one window of a stream's bytes: DATA beyond the credit it gave is a violation. */
    @Test
    void portDataBeyondTheWindowClosesTheConnection() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<dev.airlock.core.PortConnection> connecting = connectAsync(client, 8080);
        int id = portOpenId(8080);
        send(Frame.DONE, ints(id));
        dev.airlock.core.PortConnection connection = connecting.get(10, TimeUnit.SECONDS);

        byte[] chunk = ByteBuffer.allocate(4 + Frame.PORT_CHUNK).putInt(id).array();
        for (int i = 0; i < Frame.PORT_WINDOW / Frame.PORT_CHUNK; i++) {
            send(Frame.PORT_DATA, chunk);
        }
        send(Frame.PORT_DATA, ints(id, 0));
        // Nothing is read before the host has seen every frame: a read would give credit back, and the last frame would then fit.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (client.isOpen() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(client.isOpen()).as("the connection after DATA beyond the window").isFalse();

        assertThatThrownBy(() -> {
            while (connection.input().read(new byte[Frame.PORT_CHUNK]) >= 0) {
                // the window's bytes came before the violation; then the stream fails
            }
        }).isInstanceOf(IOException.class).hasMessageContaining("agent protocol violation: frame type 31 does not fit the state of request " + id);
        assertThat(client.isOpen()).isFalse();
    }

    /** Frames for a stream that ended here may cross its end: ignored. For an execution, they are a violation. */
    @Test
    void portFramesForAnUnknownIdAreIgnoredButNotForAnExecution() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(Frame.PORT_RESET, ints(999));
        send(Frame.PORT_CREDIT, ints(999, 5));
        assertThat(client.isOpen()).isTrue();

        send(Frame.PORT_EOF, ints(1));

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10))).isInstanceOf(IOException.class)
                .hasMessageContaining("port stream frame type 32 for request 1, which is no port stream");
        assertThat(client.isOpen()).isFalse();
    }

    /**
     * An agent that does not make the connection in time: the host gives the attempt up with RESET
     * and a clear ETIMEDOUT; the agent's late answer (FAILED ECANCELED) ends the stream, and the
     * channel stays up.
     */
    @Test
    void aConnectWithoutAnAnswerTimesOutAndIsReset() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<dev.airlock.core.PortConnection> connecting = connectAsync(client, 8080);
        int id = portOpenId(8080);

        assertThatThrownBy(() -> connecting.get(30, TimeUnit.SECONDS)).rootCause()
                .isInstanceOfSatisfying(dev.airlock.core.PortConnection.RefusedException.class, e -> assertThat(e.errno()).isEqualTo("ETIMEDOUT"))
                .hasMessageContaining("cannot connect to port 8080 in the sandbox: no connection within 10 s (ETIMEDOUT)");
        int length = fromClient.readInt();
        byte[] reset = new byte[length];
        fromClient.readFully(reset);
        assertThat(reset).isEqualTo(ByteBuffer.allocate(5).put((byte) Frame.PORT_RESET).putInt(id).array());

        byte[] message = "the host gave up the connection attempt".getBytes(StandardCharsets.UTF_8);
        send(Frame.FAILED, ByteBuffer.allocate(12 + message.length).putInt(id).putInt(125).putInt(message.length).put(message).array());
        send(Frame.PORT_DATA, ints(id, 0));   // crossed the RESET: ignored

        AgentProcess process = startedProcess(client);
        assertThat(process.pid()).isEqualTo(4242);
        assertThat(client.isOpen()).isTrue();
        client.close();
    }

    @Test
    void aHugeLengthFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
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
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        sendRaw(ByteBuffer.allocate(4));

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation");
    }

    @Test
    void anUnknownFrameTypeFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(99, ints(1));

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: unknown frame type 99");
    }

    @Test
    void outputForAnUnknownIdFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(Frame.STDOUT, ints(777, 0x41414141));

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: frame type 12 for unknown id 777");
    }

    @Test
    void anExitOfTheWrongShapeFailsPendingAwaits() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(Frame.EXIT, ints(1, 0));   // the signal is missing

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation");
    }

    // ------------------------------------------------------------ file frames

    /** What a client call does in the background, so the fake agent can answer it. */
    private interface ClientCall<T> {
        T call() throws Exception;
    }

    private static <T> CompletableFuture<T> inBackground(ClientCall<T> call) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return call.call();
            } catch (Exception e) {
                throw new CompletionException(e);
            }
        });
    }

    /** Reads the client's next request, checks its type, and returns its id. */
    private int nextRequest(int type) throws IOException {
        byte[] frame = new byte[fromClient.readInt()];
        fromClient.readFully(frame);
        assertThat(frame[0]).isEqualTo((byte) type);
        return ByteBuffer.wrap(frame, 1, 4).getInt();
    }

    /** The exception a background call ended with. */
    private static Throwable failureOf(CompletableFuture<?> call) {
        ExecutionException e = assertThrows(ExecutionException.class,
                () -> call.get(10, TimeUnit.SECONDS));
        return e.getCause();
    }

    private CompletableFuture<byte[]> readInBackground(AgentClient client, long maxBytes) {
        return inBackground(() -> {
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            client.readFile("/f", maxBytes, sink);
            return sink.toByteArray();
        });
    }

    private static byte[] data(int id, int length) {
        return ByteBuffer.allocate(4 + length).putInt(id).array();
    }

    private static byte[] fileInfo(int id, String name, int type, String link) {
        byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
        byte[] linkBytes = link.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(4 + 4 + nameBytes.length + 1 + 8 + 4 + 8 + 4 + linkBytes.length)
                .putInt(id).putInt(nameBytes.length).put(nameBytes).put((byte) type).putLong(5).putInt(0644).putLong(1000)
                .putInt(linkBytes.length).put(linkBytes).array();
    }

    private static byte[] failed(int id, int errno, String message) {
        byte[] bytes = message.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(12 + bytes.length).putInt(id).putInt(errno).putInt(bytes.length).put(bytes).array();
    }

    @Test
    void readsWhatTheAgentStreams() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<byte[]> read = readInBackground(client, 10);
        int id = nextRequest(Frame.READ_FILE);

        send(Frame.DATA, ByteBuffer.allocate(7).putInt(id).put(new byte[] {1, 2, 3}).array());
        send(Frame.DATA, ByteBuffer.allocate(11).putInt(id).put(new byte[] {4, 5, 6, 7, 8, 9, 10}).array());
        send(Frame.DONE, ints(id));

        assertThat(read.get(10, TimeUnit.SECONDS)).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
        assertThat(client.isOpen()).isTrue();
    }

    @Test
    void anOversizedDataChunkFailsTheRead() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<byte[]> read = readInBackground(client, Long.MAX_VALUE);
        int id = nextRequest(Frame.READ_FILE);

        send(Frame.DATA, data(id, Frame.MAX_DATA_CHUNK + 1));

        assertThat(failureOf(read)).isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: DATA chunk of 65537 bytes");
        assertThat(client.isOpen()).isFalse();
    }

    @Test
    void dataPastTheLimitFailsTheRead() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<byte[]> read = readInBackground(client, 10);
        int id = nextRequest(Frame.READ_FILE);

        send(Frame.DATA, data(id, 8));
        send(Frame.DATA, data(id, 8));

        assertThat(failureOf(read)).isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: the agent sent more than the 10 bytes asked for reading /f");
        assertThat(client.isOpen()).isFalse();
    }

    @Test
    void dataForAnUnknownIdOrForAProcessIsAViolation() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        AgentProcess process = startedProcess(client);

        send(Frame.DATA, data(1, 4));   // id 1 is the process

        assertThatThrownBy(() -> process.await(Duration.ofSeconds(10)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: frame type 17 for request 1, which is a process");
    }

    @Test
    void fileInfoForAnUnknownIdFailsPendingRequests() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<FileInfo> stat = inBackground(() -> client.stat("/f"));
        nextRequest(Frame.STAT);

        send(Frame.FILEINFO, fileInfo(777, "", 0, ""));

        assertThat(failureOf(stat)).isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: frame type 18 for unknown id 777");
    }

    @Test
    void statAndListTakeTheirPathsFromTheRequestNotTheAgent() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<FileInfo> stat = inBackground(() -> client.stat("/dir/f"));
        int statId = nextRequest(Frame.STAT);
        send(Frame.FILEINFO, fileInfo(statId, "", 2, "/target"));
        CompletableFuture<List<FileInfo>> list = inBackground(() -> client.list("/dir"));
        int listId = nextRequest(Frame.LIST);
        send(Frame.FILEINFO, fileInfo(listId, "b", 1, ""));
        send(Frame.FILEINFO, fileInfo(listId, "a", 0, ""));
        send(Frame.DONE, ints(listId));

        assertThat(stat.get(10, TimeUnit.SECONDS)).isEqualTo(new FileInfo("/dir/f", FileType.SYMLINK, 5, 0644, 1000, "/target"));
        assertThat(list.get(10, TimeUnit.SECONDS)).containsExactly(
                new FileInfo("/dir/a", FileType.FILE, 5, 0644, 1000, null),
                new FileInfo("/dir/b", FileType.DIRECTORY, 5, 0644, 1000, null));
    }

    @Test
    void aListEntryThatIsAPathIsAViolation() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<List<FileInfo>> list = inBackground(() -> client.list("/dir"));
        int id = nextRequest(Frame.LIST);

        send(Frame.FILEINFO, fileInfo(id, "../etc", 0, ""));

        assertThat(failureOf(list)).isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: LIST of /dir reported the entry name '../etc'");
    }

    @Test
    void anOverlongLinkTargetIsAViolation() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();
        CompletableFuture<List<FileInfo>> list = inBackground(() -> client.list("/dir"));
        int id = nextRequest(Frame.LIST);

        send(Frame.FILEINFO, fileInfo(id, "link", 2, "x".repeat(100_000)));

        assertThat(failureOf(list)).isInstanceOf(IOException.class)
                .hasMessageContaining("agent protocol violation: string in frame type 18 is over 4096 bytes");
    }

    @Test
    void failuresCarryTheirErrnoAndKeepTheConnection() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();

        CompletableFuture<byte[]> tooLarge = readInBackground(client, 10);
        send(Frame.FAILED, failed(nextRequest(Frame.READ_FILE), 27, "the file has 11 bytes, over the limit of 10"));
        assertThat(failureOf(tooLarge)).isInstanceOf(FileTooLargeException.class)
                .hasMessage("cannot read /f in the sandbox: the file has 11 bytes, over the limit of 10");

        CompletableFuture<Void> missing = inBackground(() -> {
            client.remove("/gone", false);
            return null;
        });
        send(Frame.FAILED, failed(nextRequest(Frame.REMOVE), 2, "No such file or directory"));
        assertThat(failureOf(missing)).isInstanceOfSatisfying(FileOperationException.class, e -> assertThat(e.errno()).isEqualTo("ENOENT"))
                .hasMessage("cannot remove /gone in the sandbox: No such file or directory (ENOENT)");

        CompletableFuture<Void> odd = inBackground(() -> {
            client.mkdir("/odd", false);
            return null;
        });
        send(Frame.FAILED, failed(nextRequest(Frame.MKDIR), 999, "strange"));
        assertThat(failureOf(odd)).isInstanceOfSatisfying(FileOperationException.class, e -> assertThat(e.errno()).isEqualTo("ERRNO_999"));

        assertThat(client.isOpen()).isTrue();
    }

    @Test
    void aWrongProtocolVersionIsRefused() throws Exception {
        send(Frame.HELLO, ints(1));   // an agent from before the file operations

        assertThatThrownBy(this::client)
                .isInstanceOf(IOException.class)
                .hasMessageContaining("protocol version 1");
    }

    @Test
    void aSilentAgentTimesOut() throws Exception {
        SocketChannel channel = accepted.get(10, TimeUnit.SECONDS);

        assertThatThrownBy(() -> AgentClient.connect(channel, Duration.ofMillis(200)))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("did not answer HELLO");
        assertThat(channel.isOpen()).isFalse();
    }

    /** An agent's FAILED text reaches the user only as printable ASCII, cut at 200 characters: no escapes, no forged lines. */
    @Test
    void anAgentsFailureTextReachesTheUserPrintableAndCut() throws Exception {
        send(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION));
        AgentClient client = client();

        CompletableFuture<Void> forged = inBackground(() -> {
            client.remove("/a", false);
            return null;
        });
        send(Frame.FAILED, failed(nextRequest(Frame.REMOVE), 2, "bad\u0000\n\u001b[31mname\u00e9\ud83d\ude00"));
        assertThat(failureOf(forged)).hasMessage("cannot remove /a in the sandbox: bad???[31mname?? (ENOENT)");

        CompletableFuture<Void> flood = inBackground(() -> {
            client.remove("/b", false);
            return null;
        });
        send(Frame.FAILED, failed(nextRequest(Frame.REMOVE), 2, "x".repeat(5000)));
        assertThat(failureOf(flood)).hasMessage("cannot remove /b in the sandbox: " + "x".repeat(197) + "... (ENOENT)");
        assertThat(client.isOpen()).isTrue();
    }
}
