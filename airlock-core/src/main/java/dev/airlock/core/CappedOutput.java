package dev.airlock.core;

import java.io.ByteArrayOutputStream;

/**
 * Collects one execution's stdout and stderr up to a byte limit each, passing on to a listener
 * only what is kept. Output past the limit is dropped and remembered as truncation; the process is
 * not stopped for it. Without {@code retain}, the kept bytes only go to the listener (which stores
 * them elsewhere) and are counted, never held here.
 */
final class CappedOutput implements OutputListener {

    private final long limit;
    private final OutputListener downstream;
    private final ByteArrayOutputStream stdout;
    private final ByteArrayOutputStream stderr;
    private final long[] counted = new long[2];
    private volatile boolean truncated;

    CappedOutput(long limit, OutputListener downstream) {
        this(limit, downstream, true);
    }

    CappedOutput(long limit, OutputListener downstream, boolean retain) {
        this.limit = limit;
        this.downstream = downstream;
        this.stdout = retain ? new ByteArrayOutputStream() : null;
        this.stderr = retain ? new ByteArrayOutputStream() : null;
    }

    @Override
    public synchronized void stdout(byte[] chunk) {
        byte[] kept = keep(stdout, 0, chunk);
        if (kept.length > 0) {
            downstream.stdout(kept);
        }
    }

    @Override
    public synchronized void stderr(byte[] chunk) {
        byte[] kept = keep(stderr, 1, chunk);
        if (kept.length > 0) {
            downstream.stderr(kept);
        }
    }

    private byte[] keep(ByteArrayOutputStream buffer, int stream, byte[] chunk) {
        long room = limit - counted[stream];
        byte[] kept = chunk;
        if (chunk.length > room) {
            truncated = true;
            kept = room <= 0 ? new byte[0] : java.util.Arrays.copyOf(chunk, (int) room);
        }
        counted[stream] += kept.length;
        if (buffer != null) {
            buffer.writeBytes(kept);
        }
        return kept;
    }

    /** The kept stdout; empty when not retained. */
    synchronized byte[] stdout() {
        return stdout == null ? new byte[0] : stdout.toByteArray();
    }

    synchronized byte[] stderr() {
        return stderr == null ? new byte[0] : stderr.toByteArray();
    }

    boolean truncated() {
        return truncated;
    }
}
