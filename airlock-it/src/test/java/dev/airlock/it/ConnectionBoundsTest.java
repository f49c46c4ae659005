package dev.airlock.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

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
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A client that holds connections without finishing requests, before any token is checked: a
 * request head trickled a byte at a time (or as endless blank lines) is cut, and hundreds of idle
 * connections beyond the server's limit do not lock an honest client out (ConnectionGuard). A
 * refusal made before its request's body arrived still reaches the client on a usable connection,
 * and a refused client cannot make the server read a large body (UnreadBodies).
 */
class ConnectionBoundsTest {

    /** Beyond the server's connection limit (512). */
    private static final int IDLE_SOCKETS = 600;
    /** How long a trickle goes on at most: a server without a head deadline would let it run to the end. */
    private static final Duration TRICKLE_FOR = Duration.ofSeconds(60);

    private static LiveServer live;

    @BeforeAll
    static void start() {
        live = LiveServer.start(c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        live.close();
    }

    @Test
    void aRequestHeadTrickledAByteAtATimeIsCut() throws IOException {
        assertThat(trickle("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ", "a")).as("the server closed the connection").isTrue();
        assertThat(health()).isEqualTo(200);
    }

    @Test
    void endlessBlankLinesBeforeARequestAreCut() throws IOException {
        assertThat(trickle("", "\r\n")).as("the server closed the connection").isTrue();
        assertThat(health()).isEqualTo(200);
    }

    @Test
    void idleConnectionsBeyondTheLimitDoNotLockOthersOut() throws Exception {
        URI uri = live.uri();
        List<Socket> idle = new ArrayList<>();
        try {
            for (int i = 0; i < IDLE_SOCKETS; i++) {
                idle.add(new Socket(uri.getHost(), uri.getPort()));
            }
            // At the limit the server closes idle connections after 1 s instead of 60 s; the honest request gets in.
            assertThat(health()).isEqualTo(200);
            long closedByServer = idle.stream().filter(ConnectionBoundsTest::closedByPeer).count();
            assertThat(closedByServer).as("idle connections the server closed").isGreaterThan(0);
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
    }

    /**
     * A kept-alive connection outlives the time the JDK's HttpClient keeps one for reuse (30 s): a
     * server that closed it then would race the client's next request, which fails with no byte of
     * answer and is not retried unless a GET or HEAD. Over half a minute of waiting: the full lane's.
     */
    @Test
    @Tag("full")
    void aConnectionIdleForLongerThanClientsKeepOneStaysOpen() throws Exception {
        URI uri = live.uri();
        Duration jdkKeepAlive = Duration.ofSeconds(30);
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            byte[] health = ("GET /health HTTP/1.1\r\nHost: " + host(uri) + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
            out.write(health);
            out.flush();
            in.readNBytes(contentLength(readHead(in)));
            // idle past the client's keep-alive; a close by the server shows as the read's end of stream
            socket.setSoTimeout((int) jdkKeepAlive.plusSeconds(5).toMillis());
            try {
                int b = in.read();
                throw new AssertionError("the server " + (b < 0 ? "closed the connection" : "sent a byte unasked")
                        + " within " + jdkKeepAlive.plusSeconds(5).toSeconds() + " s of idling");
            } catch (SocketTimeoutException stillOpen) {
                // what a client that keeps the connection 30 s relies on
            }
            out.write(health);
            out.flush();
            assertThat(readHead(in)).as("the next request on the connection after idling").startsWith("HTTP/1.1 200");
        }
    }

    /**
     * A refusal sent before its request's body arrived (the body comes 300 ms after the head): the
     * client gets the refusal, and the connection stays usable for the next request. Without the
     * drain the server closed such connections, and a body landing as it closed made its kernel
     * reset the connection, dropping the refusal the client had not read yet.
     */
    @Test
    void aRefusalWhoseBodyCameLateIsAnsweredAndTheConnectionStaysUsable() throws Exception {
        String mcp = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
        assertLateBodyRefused("POST /mcp", "Authorization: Bearer " + live.token() + "\r\nMcp-Session-Id: never-opened\r\n"
                + "Accept: application/json, text/event-stream\r\n", mcp, 404);
        assertLateBodyRefused("POST /mcp", "Authorization: Bearer wrong\r\n", mcp, 401);
        assertLateBodyRefused("POST /v1/sandboxes", "Authorization: Bearer wrong\r\n", "{}", 401);
        assertLateBodyRefused("POST /v1/no-such-endpoint", "Authorization: Bearer " + live.token() + "\r\n", "{}", 404);
    }

    /**
     * A refused client cannot make the server read a large body: it sends 32 MiB after a wrong token,
     * and the server stops reading (about 1 MiB, the drain's bound) and closes, so the send fails
     * part way. The refusal, when it arrives before the close cuts it, says Connection: close.
     */
    @Test
    void aRefusedBodyOverTheDrainBoundIsNotRead() throws Exception {
        URI uri = live.uri();
        long declared = 32L << 20;
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/sandboxes HTTP/1.1\r\nHost: " + host(uri) + "\r\nAuthorization: Bearer wrong\r\n"
                    + "Content-Type: application/json\r\nContent-Length: " + declared + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            java.util.concurrent.CompletableFuture<Long> sent = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                byte[] chunk = new byte[64 * 1024];
                long n = 0;
                try {
                    while (n < declared) {
                        out.write(chunk);
                        n += chunk.length;
                    }
                } catch (IOException closed) {
                    // the server stopped reading: what is asserted below
                }
                return n;
            });
            String head;
            try {
                head = readHead(socket.getInputStream());
            } catch (java.net.SocketException reset) {
                head = null; // the close cut the refusal: allowed, the bound is what is tested
            }
            if (head != null) {
                assertThat(head).startsWith("HTTP/1.1 401").containsIgnoringCase("Connection: close");
            }
            assertThat(sent.get(60, java.util.concurrent.TimeUnit.SECONDS)).as("bytes the server took of the refused body").isLessThan(declared);
        }
        assertThat(health()).isEqualTo(200);
    }

    private static void assertLateBodyRefused(String requestLine, String headers, String body, int status) throws Exception {
        URI uri = live.uri();
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            socket.setSoTimeout(30_000);
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            out.write((requestLine + " HTTP/1.1\r\nHost: " + host(uri) + "\r\nContent-Type: application/json\r\n" + headers
                    + "Content-Length: " + bytes.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            Thread.sleep(300);
            out.write(bytes);
            out.flush();
            String head = readHead(in);
            assertThat(head).as(requestLine).startsWith("HTTP/1.1 " + status).doesNotContainIgnoringCase("Connection: close");
            in.readNBytes(contentLength(head));
            out.write(("GET /health HTTP/1.1\r\nHost: " + host(uri) + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertThat(readHead(in)).as("the next request on the connection after " + requestLine).startsWith("HTTP/1.1 200");
        }
    }

    private static String host(URI uri) {
        return uri.getHost() + ":" + uri.getPort();
    }

    /** The status line and headers of an answer, read byte by byte up to the blank line. */
    private static String readHead(InputStream in) throws IOException {
        StringBuilder head = new StringBuilder();
        while (!head.toString().endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new AssertionError("the server closed the connection after: " + head);
            }
            head.append((char) b);
        }
        return head.toString();
    }

    private static int contentLength(String head) {
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                return Integer.parseInt(line.substring("content-length:".length()).trim());
            }
        }
        throw new AssertionError("no Content-Length in: " + head);
    }

    /** Sends {@code head}, then {@code unit} every 500 ms; true when the server closed the connection before {@link #TRICKLE_FOR}. */
    private static boolean trickle(String head, String unit) throws IOException {
        URI uri = live.uri();
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            socket.setSoTimeout(500);
            OutputStream out = socket.getOutputStream();
            InputStream in = socket.getInputStream();
            out.write(head.getBytes(StandardCharsets.US_ASCII));
            long end = System.nanoTime() + TRICKLE_FOR.toNanos();
            while (System.nanoTime() < end) {
                try {
                    out.write(unit.getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                } catch (IOException reset) {
                    return true;
                }
                try {
                    if (in.read() < 0) {
                        return true;
                    }
                } catch (SocketTimeoutException nothingYet) {
                    // the server is still reading: trickle on
                } catch (IOException reset) {
                    return true;
                }
            }
            return false;
        }
    }

    private static boolean closedByPeer(Socket s) {
        try {
            s.setSoTimeout(1);
            return s.getInputStream().read() < 0;
        } catch (SocketTimeoutException open) {
            return false;
        } catch (IOException reset) {
            return true;
        }
    }

    private static int health() {
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(30)).build()) {
            return http.send(HttpRequest.newBuilder(live.uri().resolve("/health")).timeout(Duration.ofSeconds(30)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException | InterruptedException e) {
            throw new AssertionError("GET /health did not answer: " + e, e);
        }
    }
}
