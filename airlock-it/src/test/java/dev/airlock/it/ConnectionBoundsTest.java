package dev.airlock.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
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
 * connections beyond the server's limit do not lock an honest client out (ConnectionGuard).
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
            // At the limit the server closes idle connections after 1 s instead of 30 s; the honest request gets in.
            assertThat(health()).isEqualTo(200);
            long closedByServer = idle.stream().filter(ConnectionBoundsTest::closedByPeer).count();
            assertThat(closedByServer).as("idle connections the server closed").isGreaterThan(0);
        } finally {
            for (Socket s : idle) {
                s.close();
            }
        }
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
