package dev.airlock.egress;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/** Both directions of the sandbox's connection as blocking reads and writes, and the stream views the HTTP stages read through. */
interface ByteDuplex {

    /** Like {@link InputStream#read(byte[], int, int)} with {@code len > 0}: -1 once the client ended its side. */
    int read(byte[] b, int off, int len) throws IOException;

    void write(byte[] b, int off, int len) throws IOException;

    default InputStream input() {
        return new InputStream() {
            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return ByteDuplex.this.read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return len == 0 ? 0 : ByteDuplex.this.read(b, off, len);
            }
        };
    }

    default OutputStream output() {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                ByteDuplex.this.write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                ByteDuplex.this.write(b, off, len);
            }
        };
    }
}
