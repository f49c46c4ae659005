package dev.airlock.server.mcp;

import dev.airlock.core.OutputListener;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Passes a running program's output to the client while it runs, as {@code notifications/message}
 * (logger {@code stdout} or {@code stderr}), and reports progress when the client asked for it.
 * Output is gathered and sent every {@link #INTERVAL} from a thread of its own, so a slow client
 * never stalls the reading of the program's output; what streams is capped (the full, capped
 * output is in the result anyway).
 */
final class OutputRelay implements OutputListener, AutoCloseable {

    static final Duration INTERVAL = Duration.ofMillis(250);
    private static final int MAX_STREAMED = 1024 * 1024;

    private final ToolCall call;
    private final Duration timeout;
    private final long start = System.nanoTime();
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final Thread pump;
    private long streamed;
    private boolean capped;
    private volatile boolean closed;

    OutputRelay(ToolCall call, Duration timeout) {
        this.call = call;
        this.timeout = timeout;
        this.pump = Thread.ofVirtual().name("airlock-mcp-output").start(this::pumpLoop);
    }

    @Override
    public void stdout(byte[] chunk) {
        append(out, chunk);
    }

    @Override
    public void stderr(byte[] chunk) {
        append(err, chunk);
    }

    private synchronized void append(ByteArrayOutputStream sink, byte[] chunk) {
        if (streamed + chunk.length > MAX_STREAMED) {
            capped = true;
            return;
        }
        streamed += chunk.length;
        sink.write(chunk, 0, chunk.length);
    }

    private void pumpLoop() {
        while (!closed) {
            try {
                Thread.sleep(INTERVAL);
            } catch (InterruptedException e) {
                break;
            }
            flush(false);
        }
    }

    private void flush(boolean last) {
        String o;
        String e;
        synchronized (this) {
            o = take(out, last);
            e = take(err, last);
        }
        if (!o.isEmpty()) {
            call.log("stdout", o);
        }
        if (!e.isEmpty()) {
            call.log("stderr", e);
        }
        if (!last) {
            double elapsed = (System.nanoTime() - start) / 1e9;
            call.progress(elapsed, (double) timeout.toSeconds(),
                    String.format("running for %.1fs (timeout %ds)%s", elapsed, timeout.toSeconds(),
                            capped ? "; output streaming stopped at 1 MiB, the result holds the output" : ""));
        }
    }

    /** Takes what is buffered, up to the last complete UTF-8 character unless {@code all}. */
    private static String take(ByteArrayOutputStream buffer, boolean all) {
        byte[] bytes = buffer.toByteArray();
        int end = all ? bytes.length : completeUtf8(bytes);
        buffer.reset();
        buffer.write(bytes, end, bytes.length - end);
        return new String(bytes, 0, end, StandardCharsets.UTF_8);
    }

    private static int completeUtf8(byte[] b) {
        int n = b.length;
        for (int back = 1; back <= Math.min(3, n); back++) {
            int c = b[n - back] & 0xff;
            if ((c & 0xc0) == 0x80) {
                continue; // continuation byte: look further back for the lead byte
            }
            int need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
            return need > back ? n - back : n;
        }
        return n;
    }

    /** Sends what is left; output arriving afterwards is dropped. */
    @Override
    public void close() {
        closed = true;
        pump.interrupt();
        // A cancelled call's thread is still interrupted here: wait for the pump regardless.
        boolean interrupted = Thread.interrupted();
        try {
            pump.join(1000);
        } catch (InterruptedException e) {
            interrupted = true;
        }
        flush(true);
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
