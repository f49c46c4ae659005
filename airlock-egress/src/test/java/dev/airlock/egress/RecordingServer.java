package dev.airlock.egress;

import javax.net.ssl.SSLContext;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * An HTTP(S) origin on 127.0.0.1 that keeps every byte each connection sent it, to see exactly
 * what reached upstream (a header, a secret, a second request). It answers the first request with
 * {@code seen <method> <target>} (never echoing headers) once it has read the body, half-closes,
 * and reads on until the peer closes.
 */
public final class RecordingServer implements AutoCloseable {

    private final ServerSocket server;
    /** All bytes of each finished connection (ISO-8859-1), in the order connections ended. */
    public final List<String> received = new CopyOnWriteArrayList<>();
    /** Connections accepted so far, counted at once (received lists a connection only when it ends). */
    public final java.util.concurrent.atomic.AtomicInteger accepted = new java.util.concurrent.atomic.AtomicInteger();

    /** @param tls null for plain HTTP */
    public RecordingServer(SSLContext tls) throws IOException {
        InetAddress lo = InetAddress.getLoopbackAddress();
        server = tls == null ? new ServerSocket(0, 50, lo) : tls.getServerSocketFactory().createServerSocket(0, 50, lo);
        Thread.ofVirtual().start(this::acceptLoop);
    }

    public int port() {
        return server.getLocalPort();
    }

    /**
     * What the connection that asked for {@code path} sent, once that connection has ended;
     * fails after 20 seconds without one.
     */
    public String awaitRequestFor(String path) {
        long deadline = System.nanoTime() + java.time.Duration.ofSeconds(20).toNanos();
        while (true) {
            for (String r : received) {
                if (r.contains(" " + path + " ")) {
                    return r;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the origin received no request for " + path + " within 20 s");
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** Everything every connection sent, joined. */
    public String all() {
        return String.join("\n", received);
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            Socket s;
            try {
                s = server.accept();
            } catch (IOException e) {
                return;
            }
            accepted.incrementAndGet();
            Thread.ofVirtual().start(() -> serve(s));
        }
    }

    private void serve(Socket s) {
        ByteArrayOutputStream seen = new ByteArrayOutputStream();
        try (s) {
            s.setSoTimeout(20_000);
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            while (!seen.toString(StandardCharsets.ISO_8859_1).contains("\r\n\r\n")) {
                int b = in.read();
                if (b < 0) {
                    return;
                }
                seen.write(b);
            }
            String head = seen.toString(StandardCharsets.ISO_8859_1);
            String lower = head.toLowerCase(java.util.Locale.ROOT);
            // Read the body before answering, so the answer never races it.
            java.util.regex.Matcher length = java.util.regex.Pattern.compile("\r\ncontent-length: *([0-9]+)").matcher(lower);
            if (length.find()) {
                seen.write(in.readNBytes(Integer.parseInt(length.group(1))));
            } else if (lower.contains("\r\ntransfer-encoding: chunked")) {
                while (!seen.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n0\r\n\r\n")) {
                    int b = in.read();
                    if (b < 0) {
                        return;
                    }
                    seen.write(b);
                }
            }
            String requestLine = head.substring(0, head.indexOf("\r\n"));
            String[] parts = requestLine.split(" ");
            byte[] body = ("seen " + parts[0] + " " + parts[1] + "\n").getBytes(StandardCharsets.ISO_8859_1);
            out.write(("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + body.length + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
            s.shutdownOutput();
            byte[] buf = new byte[8192];
            for (int n; (n = in.read(buf)) > 0; ) {
                seen.write(buf, 0, n);
            }
        } catch (IOException e) {
            // the peer went away: what it sent so far is kept
        } finally {
            received.add(seen.toString(StandardCharsets.ISO_8859_1));
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
