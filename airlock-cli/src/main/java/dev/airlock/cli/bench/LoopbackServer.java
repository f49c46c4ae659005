package dev.airlock.cli.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Random;

/**
 * A minimal HTTP/1.1 server on 127.0.0.1 for the egress benchmark: {@code GET /bytes?n=N} answers
 * N bytes (a fixed random megabyte repeated, so the server costs little) and closes the connection.
 */
final class LoopbackServer implements AutoCloseable {

    private static final byte[] BLOCK = new byte[1 << 20];

    static {
        new Random(42).nextBytes(BLOCK);
    }

    private final ServerSocket server;

    LoopbackServer() throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().start(this::acceptLoop);
    }

    int port() {
        return server.getLocalPort();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                Thread.ofVirtual().start(() -> serve(s));
            } catch (IOException e) {
                return;
            }
        }
    }

    private static void serve(Socket s) {
        try (s) {
            String head = readHead(s.getInputStream());
            String target = head.split(" ", 3)[1];
            int q = target.indexOf("n=");
            long n = q < 0 ? 0 : Long.parseLong(target.substring(q + 2).replaceAll("[^0-9].*", ""));
            OutputStream out = s.getOutputStream();
            out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " + n
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            for (long off = 0; off < n; ) {
                int len = (int) Math.min(BLOCK.length, n - off);
                out.write(BLOCK, 0, len);
                off += len;
            }
            out.flush();
        } catch (IOException | RuntimeException e) {
            // the client went away
        }
    }

    /** The request line and headers, up to the empty line. */
    private static String readHead(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && b.length() < 16384) {
            b.append((char) c);
            if (b.length() >= 4 && b.lastIndexOf("\r\n\r\n") == b.length() - 4) {
                break;
            }
        }
        return b.toString();
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
