package dev.airlock.server.output;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;

/**
 * Keeps at most {@code max} bytes of a file being read and remembers whether there was more. It
 * never fails mid-stream, so the agent's read always completes and its channel stays in step.
 */
public final class CappedSink extends OutputStream {

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final int max;
    private boolean overflowed;

    public CappedSink(int max) {
        this.max = max;
    }

    @Override
    public void write(int b) {
        write(new byte[]{(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) {
        int room = max - bytes.size();
        if (len > room) {
            overflowed = true;
            len = Math.max(0, room);
        }
        bytes.write(b, off, len);
    }

    public boolean overflowed() {
        return overflowed;
    }

    public byte[] toByteArray() {
        return bytes.toByteArray();
    }
}
