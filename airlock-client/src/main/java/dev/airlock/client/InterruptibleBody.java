package dev.airlock.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A response body as an {@link InputStream} whose blocking reads end when the reading thread is
 * interrupted, on every Java version. The JDK's own {@code BodyHandlers.ofInputStream()} ignores
 * interrupts on Java 17, which would let an interrupted caller keep streaming a process's output
 * until it ends. Closing the stream (also on interrupt) cancels the body, which closes the
 * connection, and the server kills an abandoned execution.
 *
 * <p>Buffers are requested one list at a time, so at most one list waits in memory.
 */
final class InterruptibleBody extends InputStream implements HttpResponse.BodySubscriber<InputStream> {

    static final HttpResponse.BodyHandler<InputStream> HANDLER = info -> new InterruptibleBody();

    private static final Object END = new Object();

    private final BlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private volatile Flow.Subscription subscription;
    private volatile boolean closed;
    private Iterator<ByteBuffer> buffers = List.<ByteBuffer>of().iterator();
    private ByteBuffer current;
    private boolean eof;

    // ---- subscriber side (HttpClient threads)

    @Override
    public CompletionStage<InputStream> getBody() {
        return CompletableFuture.completedFuture(this);
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
        subscription = s;
        if (closed) {
            s.cancel();
        } else {
            s.request(1);
        }
    }

    @Override
    public void onNext(List<ByteBuffer> item) {
        queue.add(item);
    }

    @Override
    public void onError(Throwable t) {
        queue.add(t);
    }

    @Override
    public void onComplete() {
        queue.add(END);
    }

    // ---- reader side (the caller's thread)

    /** The next buffer with bytes in it, or null at the end of the body. */
    private ByteBuffer current() throws IOException {
        while (current == null || !current.hasRemaining()) {
            if (buffers.hasNext()) {
                current = buffers.next();
                continue;
            }
            if (eof) {
                return null;
            }
            if (closed) {
                throw new IOException("the response body is closed");
            }
            Object item;
            try {
                item = queue.take();
            } catch (InterruptedException e) {
                close();
                Thread.currentThread().interrupt();
                InterruptedIOException ie = new InterruptedIOException("interrupted while reading the response");
                ie.initCause(e);
                throw ie;
            }
            if (item == END) {
                eof = true;
                return null;
            }
            if (item instanceof Throwable t) {
                eof = true;
                throw t instanceof IOException io ? io : new IOException(t);
            }
            @SuppressWarnings("unchecked")
            List<ByteBuffer> list = (List<ByteBuffer>) item;
            buffers = list.iterator();
            subscription.request(1);
        }
        return current;
    }

    @Override
    public int read() throws IOException {
        ByteBuffer b = current();
        return b == null ? -1 : b.get() & 0xff;
    }

    @Override
    public int read(byte[] bytes, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        ByteBuffer b = current();
        if (b == null) {
            return -1;
        }
        int n = Math.min(len, b.remaining());
        b.get(bytes, off, n);
        return n;
    }

    @Override
    public int available() {
        ByteBuffer b = current;
        return b == null ? 0 : b.remaining();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        Flow.Subscription s = subscription;
        if (s != null) {
            s.cancel();
        }
    }
}
