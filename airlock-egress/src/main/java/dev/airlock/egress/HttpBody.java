package dev.airlock.egress;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.IntConsumer;

/**
 * Copies exactly one request body, as its head framed it, so the proxy knows where the request
 * ends: whatever the client sends after it is never forwarded.
 */
final class HttpBody {

    private HttpBody() {
    }

    static void copyLength(InputStream in, OutputStream out, long length, IntConsumer counted) throws IOException {
        byte[] buf = new byte[64 * 1024];
        for (long left = length; left > 0; ) {
            int n = in.read(buf, 0, (int) Math.min(buf.length, left));
            if (n < 0) {
                throw new EOFException("the request body ended early");
            }
            out.write(buf, 0, n);
            counted.accept(n);
            left -= n;
        }
    }

    /** Chunked transfer coding (RFC 9112 7.1), forwarded as it came; chunk and trailer lines bounded by {@code maxLine}. */
    static void copyChunked(InputStream in, OutputStream out, int maxLine, IntConsumer counted) throws IOException {
        while (true) {
            String line = line(in, maxLine);
            int semicolon = line.indexOf(';');
            String size = (semicolon < 0 ? line : line.substring(0, semicolon)).strip();
            if (!size.matches("[0-9A-Fa-f]{1,15}")) {
                throw new IOException("malformed chunk size in the request body");
            }
            writeLine(out, line, counted);
            long n = Long.parseLong(size, 16);
            if (n == 0) {
                // Trailer fields, then the empty line that ends the body.
                for (int total = 0; ; ) {
                    String trailer = line(in, maxLine);
                    total += trailer.length() + 2;
                    if (total > maxLine) {
                        throw new IOException("request trailers too large");
                    }
                    writeLine(out, trailer, counted);
                    if (trailer.isEmpty()) {
                        return;
                    }
                }
            }
            copyLength(in, out, n, counted);
            if (!line(in, 2).isEmpty()) {
                throw new IOException("chunk data not followed by CRLF in the request body");
            }
            writeLine(out, "", counted);
        }
    }

    /** One line without its CRLF (a bare LF is refused: ambiguous framing is how requests get smuggled). */
    private static String line(InputStream in, int max) throws IOException {
        StringBuilder b = new StringBuilder();
        while (true) {
            int c = in.read();
            if (c < 0) {
                throw new EOFException("the request body ended early");
            }
            if (c == '\r') {
                if (in.read() != '\n') {
                    throw new IOException("bare CR in chunked request body");
                }
                return b.toString();
            }
            if (c == '\n' || c == 0) {
                throw new IOException("bare LF or NUL in chunked request body framing");
            }
            if (b.length() >= max) {
                throw new IOException("chunk line too long in the request body");
            }
            b.append((char) c);
        }
    }

    private static void writeLine(OutputStream out, String line, IntConsumer counted) throws IOException {
        byte[] b = (line + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
        out.write(b);
        counted.accept(b.length);
    }
}
