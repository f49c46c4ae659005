package dev.airlock.egress;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The sandbox's end of one connection: the unix-socket channel and the bounded buffer its
 * handshake is read through. Bytes the client sent beyond its handshake stay in the buffer and are
 * handed on first (to the relay, or to the TLS termination of an inspected tunnel).
 */
final class ClientChannel implements ByteDuplex, AutoCloseable {

    private final SocketChannel channel;
    /** In read mode; never larger than the handshake bound. */
    private final ByteBuffer in;

    ClientChannel(SocketChannel channel, int maxHandshakeBytes) {
        this.channel = channel;
        this.in = ByteBuffer.allocate(maxHandshakeBytes);
        this.in.flip();
    }

    SocketChannel channel() {
        return channel;
    }

    /** Bytes read from the client and not yet consumed, in read mode: consuming them moves its position. */
    ByteBuffer buffered() {
        return in;
    }

    /** Waits for at least one unread byte; false when the client ended the stream first. */
    boolean awaitByte() throws IOException {
        while (!in.hasRemaining()) {
            if (!fill()) {
                return false;
            }
        }
        return true;
    }

    /** The next unread byte, not consumed; call {@link #awaitByte()} first. */
    int peek() {
        return in.get(in.position()) & 0xff;
    }

    /** One byte of the handshake; the end of the stream here is an error. */
    int readByte() throws IOException {
        if (!awaitByte()) {
            throw new IOException("end of stream in handshake");
        }
        return in.get() & 0xff;
    }

    byte[] readBytes(int n) throws IOException {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) readByte();
        }
        return b;
    }

    void write(byte[] b) throws IOException {
        write(b, 0, b.length);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        ByteBuffer bb = ByteBuffer.wrap(b, off, len);
        while (bb.hasRemaining()) {
            channel.write(bb);
        }
    }

    /** The client's bytes: the buffered ones first, then the channel. */
    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (!in.hasRemaining() && !fill()) {
            return -1;
        }
        int n = Math.min(len, in.remaining());
        in.get(b, off, n);
        return n;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    /** Reads more into the buffer; false on end of stream. A full buffer is a handshake over its bound. */
    private boolean fill() throws IOException {
        in.compact();
        try {
            if (!in.hasRemaining()) {
                throw new IOException("header too large");
            }
            return channel.read(in) > 0;
        } finally {
            in.flip();
        }
    }
}
