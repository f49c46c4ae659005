package dev.airlock.it;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Requests as a hostile client sends them: any bytes as the body, any path, and bodies trickled a
 * few bytes at a time over a raw socket. Every request has a generous client-side timeout, so a
 * server that hangs fails the test instead of stalling it.
 */
final class RawHttp {

    /** Far beyond any healthy answer: only a hang reaches it. */
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final URI base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    RawHttp(URI base) {
        this.base = base;
    }

    record Answer(int status, String contentType, String body, Map<String, java.util.List<String>> headers) {
        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (RuntimeException e) {
                throw new AssertionError("answer " + status + " is not JSON: " + cut(body), e);
            }
        }

        String header(String name) {
            return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name))
                    .map(e -> e.getValue().getFirst()).findFirst().orElse(null);
        }
    }

    Answer send(String method, String path, byte[] body, Map<String, String> headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(TIMEOUT)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
        headers.forEach(b::header);
        try {
            HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
            return new Answer(r.statusCode(), r.headers().firstValue("Content-Type").orElse(""), r.body(), r.headers().map());
        } catch (IOException e) {
            throw new AssertionError(method + " " + cut(path) + " got no answer within " + TIMEOUT + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /**
     * Sends headers announcing {@code declaredLength} bytes, then {@code chunk} every {@code every},
     * until the server answers (or {@link #TIMEOUT} passes); returns the status line and body.
     */
    String trickle(String method, String path, Map<String, String> headers, long declaredLength, byte[] chunk, Duration every)
            throws IOException {
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(50);
            OutputStream out = socket.getOutputStream();
            StringBuilder head = new StringBuilder(method + " " + path + " HTTP/1.1\r\nHost: " + base.getHost() + ":" + base.getPort() + "\r\n");
            headers.forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
            head.append("Content-Length: ").append(declaredLength).append("\r\n\r\n");
            out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            long deadline = System.nanoTime() + TIMEOUT.toNanos();
            long sent = 0;
            long nextChunk = System.nanoTime();
            byte[] buf = new byte[8192];
            while (System.nanoTime() < deadline) {
                if (sent < declaredLength && System.nanoTime() >= nextChunk) {
                    try {
                        out.write(chunk, 0, (int) Math.min(chunk.length, declaredLength - sent));
                        out.flush();
                        sent += chunk.length;
                    } catch (IOException closedByServer) {
                        sent = declaredLength;
                    }
                    nextChunk = System.nanoTime() + every.toNanos();
                }
                try {
                    int n = in.read(buf);
                    if (n < 0) {
                        break;
                    }
                    answer.write(buf, 0, n);
                    if (complete(answer.toString(StandardCharsets.ISO_8859_1))) {
                        break;
                    }
                } catch (SocketTimeoutException nothingYet) {
                    // keep trickling
                }
            }
            String text = answer.toString(StandardCharsets.UTF_8);
            assertThat(text).as("answer to a body trickled %d bytes every %s (sent %d of %d)", chunk.length, every, sent, declaredLength)
                    .startsWith("HTTP/1.1 ");
            return text;
        }
    }

    /** A whole response: headers and a body as long as its Content-Length. */
    private static boolean complete(String raw) {
        int end = raw.indexOf("\r\n\r\n");
        if (end < 0) {
            return false;
        }
        for (String line : raw.substring(0, end).split("\r\n")) {
            if (line.toLowerCase().startsWith("content-length:")) {
                return raw.length() - end - 4 >= Long.parseLong(line.substring(15).trim());
            }
        }
        return false;
    }

    static String cut(String s) {
        return s.length() > 300 ? s.substring(0, 300) + "..." : s;
    }
}
