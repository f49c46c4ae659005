package dev.airlock.egress;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * TLS over a blocking unix-socket channel with an {@link SSLEngine}: the sandbox side of an
 * intercepted connection ({@code SSLSocket} needs a TCP socket). One thread reads while another
 * writes; the engine allows that, and every wrap (including the ones reading triggers) holds one
 * lock.
 */
final class TlsChannel implements ByteDuplex {

    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);
    private static final int MAX_RECORD_BUFFER = 1 << 20;

    private final SocketChannel channel;
    private final SSLEngine engine;
    private final Object writeLock = new Object();
    /** Ciphertext read from the channel, in read mode. */
    private ByteBuffer netIn;
    /** Plaintext not yet handed out, in read mode. */
    private ByteBuffer appIn;
    private ByteBuffer netOut;
    private boolean inboundDone;

    /** @param alreadyRead bytes of the client's first TLS records the proxy has read already */
    TlsChannel(SocketChannel channel, SSLEngine engine, ByteBuffer alreadyRead) {
        this.channel = channel;
        this.engine = engine;
        int packet = engine.getSession().getPacketBufferSize();
        this.netIn = ByteBuffer.allocate(Math.max(packet, alreadyRead.remaining()));
        this.netIn.put(alreadyRead);
        this.netIn.flip();
        this.appIn = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize());
        this.appIn.flip();
        this.netOut = ByteBuffer.allocate(packet);
    }

    SSLEngine engine() {
        return engine;
    }

    /** Runs the handshake to its end; called before any read or write. */
    void handshake() throws IOException {
        engine.beginHandshake();
        SSLEngineResult.HandshakeStatus hs = engine.getHandshakeStatus();
        while (true) {
            switch (hs) {
                case NEED_WRAP -> {
                    SSLEngineResult r = wrap(EMPTY);
                    if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                        throw new SSLException("the TLS handshake with the client failed");
                    }
                    hs = r.getHandshakeStatus();
                }
                case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
                    SSLEngineResult r = unwrap();
                    if (r == null) {
                        throw new EOFException("the client closed the connection during the TLS handshake");
                    }
                    if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                        throw new SSLException("the client ended the TLS handshake");
                    }
                    hs = r.getHandshakeStatus();
                }
                case NEED_TASK -> {
                    runTasks();
                    hs = engine.getHandshakeStatus();
                }
                case FINISHED, NOT_HANDSHAKING -> {
                    return;
                }
            }
        }
    }

    /** Like {@link InputStream#read(byte[], int, int)}: -1 once the client closed. */
    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        while (!appIn.hasRemaining()) {
            if (inboundDone) {
                return -1;
            }
            SSLEngineResult r = unwrap();
            if (r == null || r.getStatus() == SSLEngineResult.Status.CLOSED) {
                inboundDone = true;
                return -1;
            }
            SSLEngineResult.HandshakeStatus hs = r.getHandshakeStatus();
            // Post-handshake messages (a TLS 1.3 key update) may need an answer.
            while (hs == SSLEngineResult.HandshakeStatus.NEED_TASK || hs == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
                if (hs == SSLEngineResult.HandshakeStatus.NEED_TASK) {
                    runTasks();
                    hs = engine.getHandshakeStatus();
                } else {
                    hs = wrap(EMPTY).getHandshakeStatus();
                }
            }
        }
        int n = Math.min(len, appIn.remaining());
        appIn.get(b, off, n);
        return n;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        ByteBuffer src = ByteBuffer.wrap(b, off, len);
        while (src.hasRemaining()) {
            SSLEngineResult r = wrap(src);
            if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
                throw new SSLException("TLS connection to the client is closed");
            }
        }
    }

    /** Sends close_notify; the caller closes the channel. */
    void close() {
        try {
            engine.closeOutbound();
            for (int i = 0; i < 4 && !engine.isOutboundDone(); i++) {
                wrap(EMPTY);
            }
        } catch (IOException | RuntimeException e) {
            // the channel is closed next anyway
        }
    }

    /** One unwrap into an empty {@code appIn}, reading the channel as needed; null at end of stream. */
    private SSLEngineResult unwrap() throws IOException {
        while (true) {
            appIn.clear();
            SSLEngineResult r;
            try {
                r = engine.unwrap(netIn, appIn);
            } finally {
                appIn.flip();
            }
            switch (r.getStatus()) {
                case OK, CLOSED -> {
                    return r;
                }
                case BUFFER_OVERFLOW -> appIn = ByteBuffer.allocate(Math.max(appIn.capacity() * 2,
                        engine.getSession().getApplicationBufferSize())).flip();
                case BUFFER_UNDERFLOW -> {
                    netIn.compact();
                    if (!netIn.hasRemaining()) {
                        if (netIn.capacity() >= MAX_RECORD_BUFFER) {
                            throw new SSLException("TLS record from the client too large");
                        }
                        ByteBuffer bigger = ByteBuffer.allocate(netIn.capacity() * 2);
                        bigger.put(netIn.flip());
                        netIn = bigger;
                    }
                    int n;
                    try {
                        n = channel.read(netIn);
                    } finally {
                        netIn.flip();
                    }
                    if (n < 0) {
                        return null;
                    }
                }
            }
        }
    }

    private SSLEngineResult wrap(ByteBuffer src) throws IOException {
        synchronized (writeLock) {
            while (true) {
                netOut.clear();
                SSLEngineResult r = engine.wrap(src, netOut);
                netOut.flip();
                if (r.getStatus() == SSLEngineResult.Status.BUFFER_OVERFLOW) {
                    netOut = ByteBuffer.allocate(Math.max(netOut.capacity() * 2, engine.getSession().getPacketBufferSize()));
                    continue;
                }
                while (netOut.hasRemaining()) {
                    channel.write(netOut);
                }
                if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) {
                    runTasks();
                }
                return r;
            }
        }
    }

    private void runTasks() {
        for (Runnable task; (task = engine.getDelegatedTask()) != null; ) {
            task.run();
        }
    }
}
