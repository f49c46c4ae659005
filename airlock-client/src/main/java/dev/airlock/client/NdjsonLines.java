package dev.airlock.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Splits a byte stream into lines as the bytes arrive: {@link #next()} returns as soon as a whole
 * line is there, without waiting to fill a buffer, so that output reaches the caller while the
 * process still runs. A line longer than {@code maxLine} bytes is refused, so that a broken server
 * cannot make the client buffer without end.
 */
final class NdjsonLines {

    private final InputStream in;
    private final int maxLine;
    private final byte[] buf = new byte[16 * 1024];
    private int pos;
    private int limit;
    private final ByteArrayOutputStream line = new ByteArrayOutputStream();

    NdjsonLines(InputStream in, int maxLine) {
        this.in = in;
        this.maxLine = maxLine;
    }

    /** The next non-blank line without its line end, or null at the end of the stream. */
    byte[] next() throws IOException {
        while (true) {
            for (int i = pos; i < limit; i++) {
                if (buf[i] == '\n') {
                    append(pos, i - pos);
                    pos = i + 1;
                    byte[] l = take();
                    if (l.length > 0) {
                        return l;
                    }
                }
            }
            append(pos, limit - pos);
            pos = 0;
            limit = in.read(buf);
            if (limit < 0) {
                limit = 0;
                byte[] rest = take();
                return rest.length > 0 ? rest : null;
            }
        }
    }

    private void append(int from, int len) throws IOException {
        if (line.size() + (long) len > maxLine) {
            throw new IOException("a line of the stream is longer than " + maxLine + " bytes");
        }
        line.write(buf, from, len);
    }

    private byte[] take() {
        byte[] l = line.toByteArray();
        line.reset();
        int end = l.length;
        while (end > 0 && (l[end - 1] == '\r' || l[end - 1] == ' ' || l[end - 1] == '\t')) {
            end--;
        }
        if (end == l.length) {
            return l;
        }
        byte[] t = new byte[end];
        System.arraycopy(l, 0, t, 0, end);
        return t;
    }
}
