package dev.airlock.agent;

import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileType;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Decodes the payload of one frame the agent sent, field by field: the counterpart of
 * {@link FrameBuilder}. What the agent sends is hostile input, so every field is checked against
 * what is left of the frame, and one that does not fit is an {@link AgentProtocolException} naming
 * the frame's type.
 */
final class PayloadReader {

    /** Longest name or link target a FILEINFO may carry, in bytes: bounds what a LIST can make us hold. */
    static final int MAX_FILEINFO_STRING = Frame.PATH_MAX;

    private final Frame frame;
    private final ByteBuffer payload;

    PayloadReader(Frame frame) {
        this.frame = frame;
        this.payload = frame.payload();
    }

    /** The payload bytes not read yet. */
    int remaining() {
        return payload.remaining();
    }

    int u32() throws AgentProtocolException {
        if (payload.remaining() < 4) {
            throw new AgentProtocolException("frame type " + frame.type() + " is too short");
        }
        return payload.getInt();
    }

    /** A u32 length, then that many bytes of UTF-8. */
    String string() throws AgentProtocolException {
        int length = u32();
        if (length < 0 || length > payload.remaining()) {
            throw new AgentProtocolException("string in frame type " + frame.type() + " is longer than the frame");
        }
        byte[] bytes = new byte[length];
        payload.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** A {@link #string()} of at most {@link #MAX_FILEINFO_STRING} bytes, checked before it is read. */
    String boundedString() throws AgentProtocolException {
        if (payload.remaining() >= 4 && payload.getInt(payload.position()) > MAX_FILEINFO_STRING) {
            throw new AgentProtocolException("string in frame type " + frame.type() + " is over " + MAX_FILEINFO_STRING + " bytes");
        }
        return string();
    }

    /** Everything left of the payload. */
    byte[] rest() {
        byte[] bytes = new byte[payload.remaining()];
        payload.get(bytes);
        return bytes;
    }

    /** Checks that exactly {@code bytes} payload bytes are left; true, so it can head a condition. */
    boolean exactly(int bytes) throws AgentProtocolException {
        if (payload.remaining() != bytes) {
            throw new AgentProtocolException("frame type " + frame.type() + " has the wrong length");
        }
        return true;
    }

    /**
     * The rest of a FILEINFO after its id: string name, u8 type, u64 size, u32 mode, i64 mtime ms,
     * string link target. The name is returned as the path; the request it answers makes the real path.
     */
    FileInfo fileInfo() throws AgentProtocolException {
        String name = boundedString();
        if (payload.remaining() < 1 + 8 + 4 + 8) {
            throw new AgentProtocolException("FILEINFO is too short");
        }
        int typeCode = payload.get();
        long size = payload.getLong();
        int mode = payload.getInt();
        long modified = payload.getLong();
        String link = boundedString();
        exactly(0);
        FileType type = switch (typeCode) {
            case 0 -> FileType.FILE;
            case 1 -> FileType.DIRECTORY;
            case 2 -> FileType.SYMLINK;
            case 3 -> FileType.OTHER;
            default -> throw new AgentProtocolException("FILEINFO has the unknown file type " + typeCode);
        };
        if (size < 0 || (mode & ~07777) != 0) {
            throw new AgentProtocolException("FILEINFO has the size " + Long.toUnsignedString(size) + " or mode "
                    + Integer.toOctalString(mode) + ", which cannot be");
        }
        if (link.isEmpty() == (type == FileType.SYMLINK)) {
            throw new AgentProtocolException("FILEINFO of type " + type + " has a link target of " + link.length()
                    + " characters: symlinks, and only they, have a non-empty one");
        }
        return new FileInfo(name, type, size, mode, modified, type == FileType.SYMLINK ? link : null);
    }
}
