package dev.airlock.server.rest;

import dev.airlock.core.PortConnection;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One forwarded request (or spliced upgrade) of the preview proxy: its connection to the sandbox,
 * the client and sandbox whose slots it holds, and when a byte last moved either way (what the
 * proxy's watchdog ends idle and over-long streams by).
 */
final class PreviewStream {
    final String sandbox;
    final String client;
    final long started = System.nanoTime();
    final AtomicBoolean ended = new AtomicBoolean();
    final AtomicBoolean timedOut = new AtomicBoolean();
    volatile PortConnection connection;
    volatile long lastActivity = System.nanoTime();
    volatile boolean answered;

    PreviewStream(String sandbox, String client) {
        this.sandbox = sandbox;
        this.client = client;
    }

    void touch() {
        lastActivity = System.nanoTime();
    }

    void end() {
        PortConnection c = connection;
        if (c != null) {
            c.close();
        }
    }

    /** Reads from the sandbox, marking the stream active. */
    static final class ActivityInput extends java.io.FilterInputStream {
        private final PreviewStream stream;

        ActivityInput(InputStream in, PreviewStream stream) {
            super(new java.io.BufferedInputStream(in, 16 * 1024));
            this.stream = stream;
        }

        @Override
        public int read() throws IOException {
            int c = super.read();
            stream.touch();
            return c;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            stream.touch();
            return n;
        }
    }

    /** Writes to the sandbox, marking the stream active. */
    static final class ActivityOutput extends java.io.FilterOutputStream {
        private final PreviewStream stream;

        ActivityOutput(OutputStream out, PreviewStream stream) {
            super(out);
            this.stream = stream;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            stream.touch();
        }
    }
}
