package dev.airlock.server.mcp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.function.UnaryOperator;

/**
 * stdin as the stdio transport reads it, one newline-delimited JSON-RPC message at a time, each
 * passed through an observer first (which may rewrite it). Runs {@code onEnd} once at end of input.
 */
final class ObservedLines extends InputStream {

    private final BufferedReader lines;
    private final UnaryOperator<String> observer;
    private final Runnable onEnd;
    private byte[] current = new byte[0];
    private int pos;
    private boolean ended;

    ObservedLines(InputStream in, UnaryOperator<String> observer, Runnable onEnd) {
        this.lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
        this.observer = observer;
        this.onEnd = onEnd;
    }

    private boolean fill() throws IOException {
        while (pos >= current.length) {
            if (ended) {
                return false;
            }
            String line;
            try {
                line = lines.readLine();
            } catch (IOException e) {
                line = null;
            }
            if (line == null) {
                ended = true;
                onEnd.run();
                return false;
            }
            String seen = line.isBlank() ? line : observer.apply(line);
            current = (seen + "\n").getBytes(StandardCharsets.UTF_8);
            pos = 0;
        }
        return true;
    }

    @Override
    public synchronized int read() throws IOException {
        return fill() ? current[pos++] & 0xff : -1;
    }

    @Override
    public synchronized int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        if (!fill()) {
            return -1;
        }
        int n = Math.min(len, current.length - pos);
        System.arraycopy(current, pos, b, off, n);
        pos += n;
        return n;
    }

    @Override
    public int available() {
        return current.length - pos;
    }

    @Override
    public void close() throws IOException {
        lines.close();
    }
}
