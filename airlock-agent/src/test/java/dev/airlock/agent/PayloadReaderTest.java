package dev.airlock.agent;

import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileType;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.channels.Channels;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The frame codec round trip: what {@link FrameBuilder} encodes, {@link Frame#read} and {@link PayloadReader} decode. */
class PayloadReaderTest {

    private static PayloadReader read(FrameBuilder built) throws IOException {
        Frame frame = Frame.read(Channels.newChannel(new ByteArrayInputStream(built.build().array())));
        return new PayloadReader(frame);
    }

    private static FrameBuilder fileInfo(String name, int type, long size, int mode, String link) {
        return new FrameBuilder(Frame.FILEINFO, "a FILEINFO").string(name).bytes(new byte[] {(byte) type}, 0, 1).u64(size).u32(mode)
                .u64(1_700_000_000_123L).string(link);
    }

    @Test
    void fieldsComeBackAsTheyWereWritten() throws IOException {
        PayloadReader r = read(new FrameBuilder(Frame.FAILED, "a test").u32(7).u32(-2).string("No such file: é").bytes(new byte[] {1, 2, 3}, 0, 3));

        assertThat(r.u32()).isEqualTo(7);
        assertThat(r.u32()).isEqualTo(-2);
        assertThat(r.string()).isEqualTo("No such file: é");
        assertThat(r.exactly(3)).isTrue();
        assertThat(r.rest()).containsExactly(1, 2, 3);
        assertThat(r.exactly(0)).isTrue();
    }

    @Test
    void aFileInfoComesBackWhole() throws IOException {
        assertThat(read(fileInfo("link", 2, 4, 0777, "target/x")).fileInfo())
                .isEqualTo(new FileInfo("link", FileType.SYMLINK, 4, 0777, 1_700_000_000_123L, "target/x"));
        assertThat(read(fileInfo("a.txt", 0, 12, 0644, "")).fileInfo())
                .isEqualTo(new FileInfo("a.txt", FileType.FILE, 12, 0644, 1_700_000_000_123L, null));
    }

    @Test
    void aFieldThatDoesNotFitTheFrameIsAProtocolError() throws IOException {
        assertThatThrownBy(() -> read(new FrameBuilder(Frame.DONE, "a test").bytes(new byte[3], 0, 3)).u32())
                .isInstanceOf(AgentProtocolException.class).hasMessageEndingWith(": frame type 16 is too short");
        assertThatThrownBy(() -> read(new FrameBuilder(Frame.FAILED, "a test").u32(10).bytes(new byte[9], 0, 9)).string())
                .isInstanceOf(AgentProtocolException.class).hasMessageEndingWith(": string in frame type 15 is longer than the frame");
        assertThatThrownBy(() -> read(new FrameBuilder(Frame.EXIT, "a test").u32(1)).exactly(8))
                .isInstanceOf(AgentProtocolException.class).hasMessageEndingWith(": frame type 14 has the wrong length");
    }

    @Test
    void aFileInfoThatCannotBeIsRefused() throws IOException {
        assertThatThrownBy(() -> read(fileInfo("x".repeat(PayloadReader.MAX_FILEINFO_STRING + 1), 0, 1, 0644, "")).fileInfo())
                .isInstanceOf(AgentProtocolException.class).hasMessageContaining("is over 4096 bytes");
        assertThatThrownBy(() -> read(fileInfo("f", 0, 1, 0644, "somewhere")).fileInfo())
                .isInstanceOf(AgentProtocolException.class).hasMessageContaining("symlinks, and only they");
        assertThatThrownBy(() -> read(fileInfo("f", 9, 1, 0644, "")).fileInfo())
                .isInstanceOf(AgentProtocolException.class).hasMessageEndingWith(": FILEINFO has the unknown file type 9");
        assertThatThrownBy(() -> read(fileInfo("f", 0, -1, 0644, "")).fileInfo())
                .isInstanceOf(AgentProtocolException.class).hasMessageContaining("which cannot be");
        assertThatThrownBy(() -> read(fileInfo("f", 0, 1, 0644, "").u32(0)).fileInfo())
                .isInstanceOf(AgentProtocolException.class).hasMessageEndingWith(": frame type 18 has the wrong length");
    }
}
