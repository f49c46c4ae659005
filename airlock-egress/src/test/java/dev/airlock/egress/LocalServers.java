package dev.airlock.egress;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;

/**
 * Servers on 127.0.0.1 only, for the proxy to reach: HTTP and HTTPS (an echo of the request line
 * and Host, and {@code /bytes?n=N} for N bytes of {@link #pattern}), and a raw TCP echo.
 */
public final class LocalServers implements AutoCloseable {

    public final HttpServer http;
    public final HttpsServer https;
    public final ServerSocket echo;

    public LocalServers(TestTls tls) throws Exception {
        InetAddress lo = InetAddress.getLoopbackAddress();
        http = HttpServer.create(new InetSocketAddress(lo, 0), 50);
        http.createContext("/", LocalServers::handle);
        http.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        http.start();
        https = HttpsServer.create(new InetSocketAddress(lo, 0), 50);
        https.setHttpsConfigurator(new HttpsConfigurator(tls.serverContext()));
        https.createContext("/", LocalServers::handle);
        https.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        https.start();
        echo = new ServerSocket(0, 50, lo);
        Thread.ofVirtual().start(this::echoLoop);
    }

    public int httpPort() {
        return http.getAddress().getPort();
    }

    public int httpsPort() {
        return https.getAddress().getPort();
    }

    public int echoPort() {
        return echo.getLocalPort();
    }

    /** Byte i of every generated body. */
    public static byte pattern(long i) {
        return (byte) ((i * 31 + (i >>> 13)) & 0xff);
    }

    private static void handle(HttpExchange ex) throws IOException {
        String query = ex.getRequestURI().getRawQuery();
        if (ex.getRequestURI().getPath().equals("/bytes") && query != null && query.startsWith("n=")) {
            long n = Long.parseLong(query.substring(2));
            ex.getResponseHeaders().add("Content-Type", "application/octet-stream");
            ex.sendResponseHeaders(200, n);
            try (OutputStream out = ex.getResponseBody()) {
                byte[] buf = new byte[64 * 1024];
                for (long off = 0; off < n; ) {
                    int len = (int) Math.min(buf.length, n - off);
                    for (int i = 0; i < len; i++) {
                        buf[i] = pattern(off + i);
                    }
                    out.write(buf, 0, len);
                    off += len;
                }
            }
            return;
        }
        ex.getRequestBody().readAllBytes();
        StringBuilder b = new StringBuilder();
        b.append("request ").append(ex.getRequestMethod()).append(' ').append(ex.getRequestURI()).append('\n');
        b.append("host ").append(ex.getRequestHeaders().getFirst("Host")).append('\n');
        ex.getRequestHeaders().forEach((k, v) -> b.append("header ").append(k.toLowerCase()).append('\n'));
        byte[] body = b.toString().getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(200, body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }

    private void echoLoop() {
        while (!echo.isClosed()) {
            try {
                Socket s = echo.accept();
                Thread.ofVirtual().start(() -> {
                    try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
                        in.transferTo(out);
                    } catch (IOException e) {
                        // peer gone
                    }
                });
            } catch (IOException e) {
                return;
            }
        }
    }

    @Override
    public void close() throws IOException {
        http.stop(0);
        https.stop(0);
        echo.close();
    }
}
