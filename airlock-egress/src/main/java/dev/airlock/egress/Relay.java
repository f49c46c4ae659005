package dev.airlock.egress;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * An opaque tunnel: bytes both ways, unread, until both sides have ended, each counted against the
 * sandbox's budget. What the client sent behind its handshake goes upstream first.
 */
final class Relay {

    private static final int BUFFER = 64 * 1024;

    private final String sandboxId;

    Relay(String sandboxId) {
        this.sandboxId = sandboxId;
    }

    void run(EgressConnection c, Socket upstream) throws IOException {
        c.startRelaying();
        // A cut (a revocation) that raced with the start of relaying.
        if (c.cutBy() != null) {
            return;
        }
        OutputStream toUpstream = upstream.getOutputStream();
        InputStream fromUpstream = upstream.getInputStream();
        SocketChannel client = c.client.channel();
        ByteBuffer early = c.client.buffered();
        if (early.hasRemaining()) {
            int n = early.remaining();
            toUpstream.write(early.array(), early.arrayOffset() + early.position(), n);
            early.position(early.limit());
            c.count(c.record.up, n);
        }
        Thread downstream = Thread.ofVirtual().name("egress-down-" + sandboxId).start(() -> {
            byte[] buf = new byte[BUFFER];
            try {
                for (int n; (n = fromUpstream.read(buf)) > 0; ) {
                    c.client.write(buf, 0, n);
                    c.count(c.record.down, n);
                }
                client.shutdownOutput();
            } catch (IOException e) {
                c.cut("downstream: " + e.getMessage());
            }
        });
        ByteBuffer buf = ByteBuffer.allocate(BUFFER);
        try {
            for (int n; (n = client.read(buf)) > 0; buf.clear()) {
                toUpstream.write(buf.array(), 0, n);
                c.count(c.record.up, n);
            }
            upstream.shutdownOutput();
        } catch (IOException e) {
            if (c.cutBy() == null) {
                c.cut("upstream: " + e.getMessage());
            }
        }
        join(downstream);
    }

    static void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
