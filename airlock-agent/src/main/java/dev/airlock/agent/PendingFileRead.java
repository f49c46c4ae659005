package dev.airlock.agent;

import dev.airlock.core.SandboxAgent.FileTooLargeException;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A READ_FILE: DATA chunks, then DONE or FAILED. The reader thread hands chunks to the caller's
 * thread, which writes them to the caller's sink, so a sink that throws or blocks never runs on
 * the reader. The hand-off is bounded: while the sink is slow the reader waits, the socket fills
 * and the agent blocks in send, which is the only flow control the protocol has. Once the caller
 * gives up, the rest of the file is discarded as it arrives.
 */
final class PendingFileRead implements FileRequest {

    private static final int QUEUED_CHUNKS = 16;
    private static final long POLL_MILLIS = 50;
    /** Queued to wake the caller when the read ended; never written to the sink. */
    private static final byte[] WAKE_UP = new byte[0];

    private final String path;
    private final long maxBytes;
    private final BlockingQueue<byte[]> chunks = new ArrayBlockingQueue<>(QUEUED_CHUNKS);
    private final CompletableFuture<Void> end = new CompletableFuture<>();
    private volatile boolean abandoned;
    /** Bytes accepted so far; reader thread only. */
    private long received;

    PendingFileRead(String path, long maxBytes) {
        this.path = path;
        this.maxBytes = maxBytes;
    }

    @Override
    public boolean onData(byte[] chunk) throws AgentProtocolException {
        if (end.isDone()) {
            return false;
        }
        if (chunk.length > maxBytes - received) {
            throw new AgentProtocolException("the agent sent more than the " + maxBytes + " bytes asked for reading " + path);
        }
        received += chunk.length;
        try {
            while (!abandoned && !chunks.offer(chunk, POLL_MILLIS, TimeUnit.MILLISECONDS)) {
                // The caller is still writing earlier chunks to its sink.
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();   // the reader loop then ends on its closed channel
        }
        return true;
    }

    @Override
    public boolean onDone() {
        return finish(null);
    }

    @Override
    public boolean onFailed(int errno, String message) {
        String what = "cannot read " + path;
        return finish(errno == Errno.EFBIG
                ? new FileTooLargeException(what + " in the sandbox: " + message)
                : Errno.failure(what, errno, message));
    }

    @Override
    public void fail(IOException cause) {
        finish(cause);
    }

    private boolean finish(IOException failure) {
        boolean first = failure == null ? end.complete(null) : end.completeExceptionally(failure);
        chunks.offer(WAKE_UP);   // if the queue is full, the caller finds the end after draining it
        return first;
    }

    /**
     * Writes every chunk to {@code sink} until the read ends, on the calling thread.
     *
     * @throws TimeoutException if no chunk and no end came for {@code idleTimeout}
     */
    void copyTo(OutputStream sink, Duration idleTimeout) throws IOException, InterruptedException, TimeoutException {
        long idleSince = System.nanoTime();
        try {
            while (true) {
                byte[] chunk = chunks.poll(POLL_MILLIS, TimeUnit.MILLISECONDS);
                if (chunk != null && chunk != WAKE_UP) {
                    sink.write(chunk);
                    idleSince = System.nanoTime();
                } else if (end.isDone() && chunks.isEmpty()) {
                    // Every DATA was queued before DONE or FAILED completed `end`: nothing is left behind.
                    rethrowFailure();
                    return;
                } else if (System.nanoTime() - idleSince > idleTimeout.toNanos()) {
                    throw new TimeoutException();
                }
            }
        } finally {
            abandoned = true;
            chunks.clear();
        }
    }

    private void rethrowFailure() throws IOException {
        try {
            end.join();
        } catch (CompletionException e) {
            throw AgentClient.forCaller(e.getCause());
        }
    }
}
