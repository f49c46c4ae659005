package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The real agent, spoken to frame by frame: a malformed frame from the host makes it kill what it
 * started and exit, whatever else is going on.
 */
@Timeout(60)
class AgentValidationTest {

    @TempDir
    Path dir;
    private RealAgent.Connection agent;
    private DataInputStream fromAgent;

    @BeforeEach
    void launch() throws Exception {
        agent = RealAgent.launch(dir);
        fromAgent = new DataInputStream(Channels.newInputStream(agent.channel()));
        assertThat(readFrame()).isEqualTo(frame(Frame.HELLO, ints(AgentClient.PROTOCOL_VERSION)));
    }

    @AfterEach
    void stop() throws Exception {
        agent.channel().close();
        if (!agent.process().waitFor(10, TimeUnit.SECONDS)) {
            agent.process().destroyForcibly();
        }
    }

    @Test
    void aNulByteInAStringEndsTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(Frame.WRITE_FILE, "test").u32(2).u32(5).bytes("/a\0b".getBytes(StandardCharsets.UTF_8), 0, 4)
                .u32(0644).build());

        assertEndsAndKills(sleep, "NUL byte");
    }

    @Test
    void anOversizedLengthEndsTheAgent() throws Exception {
        long sleep = startSleep();

        send(ByteBuffer.allocate(4).putInt(0, Integer.MIN_VALUE));

        assertEndsAndKills(sleep, "length 2147483648");
    }

    @Test
    void aStringLongerThanItsFrameEndsTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(Frame.EXEC, "test").u32(2).u32(1).u32(1000).bytes(new byte[8], 0, 8).build());

        assertEndsAndKills(sleep, "string longer than the frame");
    }

    @Test
    void anUnknownTypeEndsTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(42, "test").u32(2).build());

        assertEndsAndKills(sleep, "unknown type 42");
    }

    @Test
    void unknownWriteFileFlagsEndTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(Frame.WRITE_FILE, "test").u32(2).string(dir.resolve("x").toString()).u32(0644).u32(2).build());

        assertEndsAndKills(sleep, "unknown WRITE_FILE flags 2");
        assertThat(dir.resolve("x")).doesNotExist();
    }

    @Test
    void trailingBytesAfterAFileRequestEndTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(Frame.STAT, "test").u32(2).string("/").u32(0).build());

        assertEndsAndKills(sleep, "trailing bytes after STAT");
    }

    @Test
    void aPortOpenOfPortZeroEndsTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(Frame.PORT_OPEN, "test").u32(2).u32(0).build());

        assertEndsAndKills(sleep, "PORT_OPEN of port 0");
    }

    @Test
    void aPortOpenWithTheIdOfARunningProcessEndsTheAgent() throws Exception {
        long sleep = startSleep();   // id 1

        send(new FrameBuilder(Frame.PORT_OPEN, "test").u32(1).u32(80).build());

        assertEndsAndKills(sleep, "id 1 is already in use");
    }

    /** A live port stream, then frames that break its rules: too much DATA in one frame, a second EOF. */
    @Test
    void portFramesThatBreakTheRulesEndTheAgent() throws Exception {
        long sleep = startSleep();
        try (java.net.ServerSocket server = new java.net.ServerSocket(0, 4, java.net.InetAddress.getLoopbackAddress())) {
            send(new FrameBuilder(Frame.PORT_OPEN, "test").u32(2).u32(server.getLocalPort()).build());
            assertThat(readFrame()).isEqualTo(frame(Frame.DONE, ints(2)));
            send(new FrameBuilder(Frame.PORT_EOF, "test").u32(2).build());
            send(new FrameBuilder(Frame.PORT_DATA, "test").u32(99).bytes(new byte[1], 0, 1).build());   // no such stream: ignored

            send(new FrameBuilder(Frame.PORT_EOF, "test").u32(2).build());

            assertEndsAndKills(sleep, "port EOF after EOF");
        }
    }

    @Test
    void portDataOverTheChunkSizeEndsTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(Frame.PORT_DATA, "test").u32(7).bytes(new byte[Frame.PORT_CHUNK + 1], 0, Frame.PORT_CHUNK + 1).build());

        assertEndsAndKills(sleep, "port DATA of 16385 bytes");
    }

    @Test
    void aReadWithTheIdOfARunningProcessEndsTheAgent() throws Exception {
        long sleep = startSleep();   // id 1

        send(new FrameBuilder(Frame.READ_FILE, "test").u32(1).string("/etc/hostname").u64(100).u32(0).build());

        assertEndsAndKills(sleep, "id 1 is already in use");
    }

    @Test
    void aResizeOfAnExecutionWithoutATerminalEndsTheAgent() throws Exception {
        long sleep = startSleep();   // id 1, on pipes

        send(new FrameBuilder(Frame.RESIZE, "test").u32(1).u32(24).u32(80).build());

        assertEndsAndKills(sleep, "RESIZE for an execution without a terminal");
    }

    @Test
    void aResizeOutOfRangeEndsTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(Frame.RESIZE, "test").u32(7).u32(1001).u32(80).build());

        assertEndsAndKills(sleep, "bad RESIZE");
    }

    @Test
    void anExecWithATerminalSizeOutOfRangeEndsTheAgent() throws Exception {
        long sleep = startSleep();

        send(new FrameBuilder(Frame.EXEC, "test").u32(2).strings(List.of("true")).strings(List.of()).string("/").u32(0).u32(80).build());

        assertEndsAndKills(sleep, "terminal size 0x80");
    }

    @Test
    void aResizeForAnIdThatIsNotRunningIsIgnored() throws Exception {
        send(new FrameBuilder(Frame.RESIZE, "test").u32(9).u32(24).u32(80).build());
        send(new FrameBuilder(Frame.MKDIR, "test").u32(5).string("relative").u32(0).build());

        assertThat(ByteBuffer.wrap(readFrame()).get()).as("the next answer: the agent serves on").isEqualTo((byte) Frame.FAILED);
        assertThat(agent.process().isAlive()).isTrue();
    }

    @Test
    void aRelativePathIsRefusedWithoutEndingTheAgent() throws Exception {
        send(new FrameBuilder(Frame.MKDIR, "test").u32(5).string("relative").u32(0).build());

        byte[] failed = "the path must be absolute".getBytes(StandardCharsets.UTF_8);
        assertThat(readFrame()).isEqualTo(frame(Frame.FAILED, ByteBuffer.allocate(12 + failed.length)
                .putInt(5).putInt(22).putInt(failed.length).put(failed).array()));   // 22: EINVAL
        assertThat(agent.process().isAlive()).isTrue();
    }

    private long startSleep() throws Exception {
        ExecRequest request = new ExecRequest(List.of("sleep", "100"), Map.of("PATH", "/usr/bin:/bin"), "/", null, null);
        send(new FrameBuilder(Frame.EXEC, "test").u32(1).strings(request.argv()).strings(List.of("PATH=/usr/bin:/bin"))
                .string("/").build());
        ByteBuffer started = ByteBuffer.wrap(readFrame());
        assertThat(started.get()).isEqualTo((byte) Frame.STARTED);
        assertThat(started.getInt()).isEqualTo(1);
        return started.getInt();
    }

    private void assertEndsAndKills(long pid, String logged) throws Exception {
        assertThat(agent.process().waitFor(10, TimeUnit.SECONDS)).as("agent exited").isTrue();
        assertThat(agent.process().exitValue()).isEqualTo(1);
        assertThat(Files.readString(dir.resolve("agent.log"))).contains("malformed frame from host", logged);
        assertThat(Path.of("/proc/" + pid)).doesNotExist();   // killed and reaped by the agent before it exited
    }

    private void send(ByteBuffer frame) throws IOException {
        while (frame.hasRemaining()) {
            agent.channel().write(frame);
        }
    }

    private byte[] readFrame() throws IOException {
        byte[] frame = new byte[fromAgent.readInt()];
        fromAgent.readFully(frame);
        return frame;
    }

    private static byte[] frame(int type, byte[] payload) {
        return ByteBuffer.allocate(1 + payload.length).put((byte) type).put(payload).array();
    }

    private static byte[] ints(int... values) {
        ByteBuffer b = ByteBuffer.allocate(4 * values.length);
        for (int v : values) {
            b.putInt(v);
        }
        return b.array();
    }
}
