package dev.airlock.agent;

import dev.airlock.core.OutputListener;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;

/** Collects what a process writes, and the largest chunk seen. */
final class Output implements OutputListener {

    private final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
    private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    final AtomicInteger largestChunk = new AtomicInteger();

    @Override
    public synchronized void stdout(byte[] chunk) {
        stdout.writeBytes(chunk);
        largestChunk.accumulateAndGet(chunk.length, Math::max);
    }

    @Override
    public synchronized void stderr(byte[] chunk) {
        stderr.writeBytes(chunk);
        largestChunk.accumulateAndGet(chunk.length, Math::max);
    }

    synchronized String stdout() {
        return stdout.toString(StandardCharsets.UTF_8);
    }

    synchronized String stderr() {
        return stderr.toString(StandardCharsets.UTF_8);
    }
}
