package dev.airlock.server.rest;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The client's connection after a 101: its bytes go to the sandbox's server as Jetty reads them,
 * and the server's to it from a virtual thread, until either side closes (the other is then
 * half-closed, so what is in flight still arrives) or the stream idles out.
 */
final class PreviewSplice extends org.eclipse.jetty.io.AbstractConnection implements org.eclipse.jetty.io.Connection.UpgradeTo {
    private final PortProxy proxy;
    private final PreviewStream stream;
    private final InputStream fromSandbox;
    private final OutputStream toSandbox;
    private final java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocate(16 * 1024);
    private final AtomicInteger open = new AtomicInteger(2);
    private byte[] early = new byte[0];

    PreviewSplice(org.eclipse.jetty.io.EndPoint endPoint, java.util.concurrent.Executor executor, PortProxy proxy, PreviewStream stream,
                  InputStream fromSandbox, OutputStream toSandbox) {
        super(endPoint, executor);
        this.proxy = proxy;
        this.stream = stream;
        this.fromSandbox = fromSandbox;
        this.toSandbox = toSandbox;
    }

    @Override
    public void onUpgradeTo(java.nio.ByteBuffer prefilled) {
        if (prefilled != null && prefilled.hasRemaining()) {
            early = new byte[prefilled.remaining()];
            prefilled.get(early);
        }
    }

    @Override
    public void onOpen() {
        super.onOpen();
        getEndPoint().setIdleTimeout(PortProxy.IDLE.toMillis());
        Thread.ofVirtual().name("airlock-port-down").start(this::down);
        Thread.ofVirtual().name("airlock-port-up").start(() -> {
            try {
                if (early.length > 0) {
                    toSandbox.write(early);
                    toSandbox.flush();
                }
                fillInterested();
            } catch (IOException e) {
                fail();
            }
        });
    }

    /** The client sent bytes (Jetty calls this on a thread that may block): on to the sandbox. */
    @Override
    public void onFillable() {
        try {
            while (true) {
                buffer.clear();
                buffer.flip();
                int n = getEndPoint().fill(buffer);
                if (n > 0) {
                    toSandbox.write(buffer.array(), buffer.arrayOffset() + buffer.position(), buffer.remaining());
                    toSandbox.flush();
                } else if (n == 0) {
                    fillInterested();
                    return;
                } else {
                    toSandbox.close(); // the client is done sending: half-close, the answer may still come
                    done();
                    return;
                }
            }
        } catch (IOException e) {
            fail();
        }
    }

    /** The sandbox's bytes to the client, until the sandbox's server closes. */
    private void down() {
        byte[] buf = new byte[16 * 1024];
        try {
            int n;
            while ((n = fromSandbox.read(buf)) >= 0) {
                org.eclipse.jetty.util.FutureCallback written = new org.eclipse.jetty.util.FutureCallback();
                getEndPoint().write(written, java.nio.ByteBuffer.wrap(buf, 0, n));
                written.get(PortProxy.IDLE.toMillis(), TimeUnit.MILLISECONDS);
                stream.touch();
            }
            getEndPoint().shutdownOutput();
            done();
        } catch (Exception e) {
            fail();
        }
    }

    private void done() {
        if (open.decrementAndGet() <= 0) {
            getEndPoint().close();
            proxy.end(stream);
        }
    }

    private void fail() {
        open.set(0);
        stream.end();
        getEndPoint().close();
        proxy.end(stream);
    }

    @Override
    public void onClose(Throwable cause) {
        super.onClose(cause);
        stream.end();
        proxy.end(stream);
    }
}
