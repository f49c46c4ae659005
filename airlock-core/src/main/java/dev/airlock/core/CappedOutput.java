package dev.airlock.core;

import java.io.ByteArrayOutputStream;

/**
 * Collects one execution's stdout and stderr up to a byte limit each, passing on to a listener
 * only what is kept. Output past the limit is dropped and remembered as truncation; the process is
 * not stopped for it.
 */
final class CappedOutput implements OutputListener {

    private final long limit;
    private final OutputListener downstream;
    private final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    private volatile boolean truncated;

    CappedOutput(long limit, OutputListener downstream) {
        this.limit = limit;
        this.downstream = downstream;
    }

    @Override
    public synchronized void stdout(byte[] chunk) {
        byte[] kept = keep(stdout, chunk);
        if (kept.length > 0) {
            downstream.stdout(kept);
        }
    }

    @Override
    public synchronized void stderr(byte[] chunk) {
        byte[] kept = keep(stderr, chunk);
        if (kept.length > 0) {
            downstream.stderr(kept);
        }
    }

    private byte[] keep(ByteArrayOutputStream buffer, byte[] chunk) {
        long room = limit - buffer.size();
        if (chunk.length <= room) {
            buffer.writeBytes(chunk);
            return chunk;
        }
        truncated = true;
        if (room <= 0) {
            return new byte[0];
        }
        byte[] head = java.util.Arrays.copyOf(chunk, (int) room);
        buffer.writeBytes(head);
        return head;
    }

    synchronized byte[] stdout() {
        return stdout.toByteArray();
    }

    synchronized byte[] stderr() {
        return stderr.toByteArray();
    }

    boolean truncated() {
        return truncated;
    }
}
