package dev.airlock.cli;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * HTTP/1.1 on one kept-alive connection, written and read on the caller's thread, for the CLI's calls
 * whose cost is measured: {@code airlock bench} (what it times is the server's work and the loopback,
 * not a client library's) and {@code airlock run --server} (a one-shot whose JVM exists for one call).
 * The JDK's {@code HttpClient} hands each request between its own threads (the caller, its selector,
 * its executor), which on a 2-core host costs 1 to 4 ms a request, more than the server's work for a
 * create from the pool ({@code airlock bench} measures {@code GET /health} through both), and a JVM
 * that starts it for one call pays for its classes and its default TLS context first, whatever the
 * scheme: a few hundred milliseconds. One request at a time (calls are serialized). A connection the
 * server closed between requests is opened again once for a request that may be sent twice (not a
 * {@code POST}: the server may have carried it out before it closed); a {@code POST} goes on a new
 * connection instead once the old one has been idle for {@link #REUSED_FOR} (the server closes idle
 * ones after 60 s).
 */
public final class PlainHttp implements AutoCloseable {

    /** The longest a request of the benchmark may wait for its answer (a fork of ten microVMs under TCG takes tens of seconds). */
    public static final int BENCH_READ_TIMEOUT_MILLIS = 15 * 60 * 1000;
    /** The largest answer read (the benchmark's largest, a page of the audit log, and a run's, its output and files, are far smaller). */
    private static final int MAX_BODY_BYTES = 64 << 20;
    /** How long a connection stays in use for a POST: well under the server's 60 s idle timeout (ConnectionGuard). */
    static final java.time.Duration REUSED_FOR = java.time.Duration.ofSeconds(20);

    public record Response(int status, String body) {
    }

    private final String host;
    private final int port;
    /** The path of the base URL, put before each request's ("" for none). */
    private final String prefix;
    private final String authorization;
    private final SSLSocketFactory tls;
    private final int readTimeoutMillis;
    private Socket socket;
    private OutputStream out;
    private InputStream in;
    /** {@link System#nanoTime} of the last answer read on the connection. */
    private long idleSince;

    /**
     * @param base              the server: http, or https when {@code tls} is given
     * @param tls               makes the connection's TLS, verifying the server's certificate and name; null: plain HTTP
     * @param readTimeoutMillis the longest a request may wait for (the next bytes of) its answer
     */
    public PlainHttp(URI base, String token, SSLSocketFactory tls, int readTimeoutMillis) {
        if (!(tls == null ? "http" : "https").equals(base.getScheme()) || base.getHost() == null) {
            throw new IllegalArgumentException("not an " + (tls == null ? "http" : "https") + " URL with a host: " + base);
        }
        this.host = base.getHost();
        this.port = base.getPort() >= 0 ? base.getPort() : tls == null ? 80 : 443;
        this.prefix = base.getRawPath() == null ? "" : base.getRawPath().replaceAll("/+$", "");
        this.authorization = "Bearer " + token;
        this.tls = tls;
        this.readTimeoutMillis = readTimeoutMillis;
    }

    /** {@code method path} with {@code body} (JSON; null: none) and its answer. */
    public synchronized Response send(String method, String path, String body) throws IOException {
        boolean once = method.equals("POST");
        if (socket != null && once && System.nanoTime() - idleSince > REUSED_FOR.toNanos()) {
            close();
        }
        boolean reused = socket != null;
        if (!reused) {
            connect();
        }
        try {
            write(method, path, body);
            Response answer = read(method);
            idleSince = System.nanoTime();
            return answer;
        } catch (ClosedBeforeAnswer e) {
            close();
            if (!reused) {
                throw e;
            }
            if (once) {
                throw new IOException(e.getMessage() + " (a POST is not sent again: the server may have carried it out)", e);
            }
            // the server closed the kept-alive connection before it read this request: once more, on a new one
            connect();
            write(method, path, body);
            Response answer = read(method);
            idleSince = System.nanoTime();
            return answer;
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    private void connect() throws IOException {
        Socket plain = new Socket(host, port);
        try {
            plain.setTcpNoDelay(true);
            plain.setSoTimeout(readTimeoutMillis);
            if (tls == null) {
                socket = plain;
            } else {
                SSLSocket secured = (SSLSocket) tls.createSocket(plain, host, port, true);
                SSLParameters parameters = secured.getSSLParameters();
                parameters.setEndpointIdentificationAlgorithm("HTTPS");
                secured.setSSLParameters(parameters);
                secured.startHandshake();
                socket = secured;
            }
        } catch (IOException | RuntimeException e) {
            plain.close();
            throw e;
        }
        out = socket.getOutputStream();
        in = new BufferedInputStream(socket.getInputStream(), 16 * 1024);
    }

    private void write(String method, String path, String body) throws IOException {
        byte[] content = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        StringBuilder head = new StringBuilder(256).append(method).append(' ').append(prefix).append(path).append(" HTTP/1.1\r\n")
                .append("Host: ").append(host).append(':').append(port).append("\r\n")
                .append("Authorization: ").append(authorization).append("\r\n");
        if (body != null) {
            head.append("Content-Type: application/json\r\n");
        }
        head.append("Content-Length: ").append(content.length).append("\r\n\r\n");
        byte[] bytes = head.toString().getBytes(StandardCharsets.ISO_8859_1);
        byte[] request = new byte[bytes.length + content.length];
        System.arraycopy(bytes, 0, request, 0, bytes.length);
        System.arraycopy(content, 0, request, bytes.length, content.length);
        out.write(request);
        out.flush();
    }

    private Response read(String method) throws IOException {
        String statusLine = line(true);
        String[] parts = statusLine.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
            throw new IOException("not an HTTP/1.1 answer: " + statusLine);
        }
        int status = Integer.parseInt(parts[1]);
        long length = -1;
        boolean chunked = false;
        boolean close = parts[0].equals("HTTP/1.0");
        for (String header = line(false); !header.isEmpty(); header = line(false)) {
            int colon = header.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = header.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = header.substring(colon + 1).trim();
            switch (name) {
                case "content-length" -> length = Long.parseLong(value);
                case "transfer-encoding" -> chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
                case "connection" -> close |= value.equalsIgnoreCase("close");
                default -> { }
            }
        }
        byte[] body;
        if (method.equals("HEAD") || status == 204 || status == 304 || status / 100 == 1) {
            body = new byte[0];
        } else if (chunked) {
            body = chunks();
        } else if (length >= 0) {
            body = exactly(length);
        } else {
            body = bounded(in.readAllBytes());
            close = true;
        }
        if (close) {
            close();
        }
        return new Response(status, new String(body, StandardCharsets.UTF_8));
    }

    private byte[] chunks() throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        while (true) {
            String size = line(false);
            int semicolon = size.indexOf(';');
            long n = Long.parseLong((semicolon < 0 ? size : size.substring(0, semicolon)).trim(), 16);
            if (n == 0) {
                while (!line(false).isEmpty()) {
                    // trailers: none the benchmark reads
                }
                return body.toByteArray();
            }
            if (body.size() + n > MAX_BODY_BYTES) {
                throw new IOException("an answer of over " + MAX_BODY_BYTES + " bytes");
            }
            body.writeBytes(exactly(n));
            line(false);
        }
    }

    private byte[] exactly(long n) throws IOException {
        if (n > MAX_BODY_BYTES) {
            throw new IOException("an answer of over " + MAX_BODY_BYTES + " bytes");
        }
        byte[] b = in.readNBytes((int) n);
        if (b.length != n) {
            throw new EOFException("the server closed the connection within an answer");
        }
        return b;
    }

    private static byte[] bounded(byte[] b) throws IOException {
        if (b.length > MAX_BODY_BYTES) {
            throw new IOException("an answer of over " + MAX_BODY_BYTES + " bytes");
        }
        return b;
    }

    /** One line without its CRLF; {@code first}: the status line, before which an end means the server closed an idle connection. */
    private String line(boolean first) throws IOException {
        StringBuilder s = new StringBuilder(64);
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                if (first && s.isEmpty()) {
                    throw new ClosedBeforeAnswer();
                }
                throw new EOFException("the server closed the connection within an answer");
            }
            if (s.length() > 16 * 1024) {
                throw new IOException("an answer's line of over 16 KiB");
            }
            s.append((char) c);
        }
        int end = s.length();
        return end > 0 && s.charAt(end - 1) == '\r' ? s.substring(0, end - 1) : s.toString();
    }

    @Override
    public synchronized void close() {
        if (socket != null) {
            try {
                socket.close();
            } catch (IOException e) {
                // closed either way
            }
            socket = null;
        }
    }

    private static final class ClosedBeforeAnswer extends EOFException {
        ClosedBeforeAnswer() {
            super("the server closed the connection before it answered");
        }
    }
}
