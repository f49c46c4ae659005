package dev.airlock.agent;

import dev.airlock.core.AirlockException;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;

/**
 * Encodes one host-to-agent frame. The agent treats a malformed frame as fatal (it kills the whole
 * sandbox), so everything it would refuse is refused here first, as a user error.
 */
final class FrameBuilder {

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final String what;

    /** {@code what} names the request in error messages, e.g. "the command". */
    FrameBuilder(int type, String what) {
        this.what = what;
        out.writeBytes(new byte[4]);   // length, filled in by build()
        out.write(type);
    }

    FrameBuilder u32(int value) {
        out.writeBytes(ByteBuffer.allocate(4).putInt(value).array());
        return this;
    }

    FrameBuilder u64(long value) {
        out.writeBytes(ByteBuffer.allocate(8).putLong(value).array());
        return this;
    }

    FrameBuilder string(String value) {
        if (value.indexOf('\0') >= 0) {
            throw AirlockException.invalid(what + " contains a NUL byte");
        }
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        u32(bytes.length);
        out.writeBytes(bytes);
        return this;
    }

    FrameBuilder strings(Collection<String> values) {
        u32(values.size());
        values.forEach(this::string);
        return this;
    }

    FrameBuilder bytes(byte[] bytes, int offset, int length) {
        out.write(bytes, offset, length);
        return this;
    }

    ByteBuffer build() {
        ByteBuffer frame = ByteBuffer.wrap(out.toByteArray());
        int length = frame.capacity() - 4;
        if (length > Frame.MAX_LENGTH) {
            throw new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED,
                    what + " takes " + length + " bytes, over the " + Frame.MAX_LENGTH
                            + " bytes one message to the sandbox agent can carry");
        }
        return frame.putInt(0, length);
    }
}
