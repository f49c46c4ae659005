package dev.airlock.cli;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * PlainHttp against a real socket whose server answers the first request of each connection and
 * closes the connection on the second without an answer, as a server does with a kept-alive
 * connection that idled out just as the next request arrived: a request that may be sent twice is
 * sent again on a new connection, a POST never is.
 */
class PlainHttpTest {

    private ServerSocket server;
    private Thread acceptor;
    /** The request lines the server read, in order. */
    private final List<String> received = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws IOException {
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        acceptor = Thread.ofPlatform().daemon().start(() -> {
            while (!server.isClosed()) {
                try (Socket s = server.accept()) {
                    serveOneThenDrop(s);
                } catch (IOException e) {
                    // closed by the test, or the client went away
                }
            }
        });
    }

    @AfterEach
    void stop() throws Exception {
        server.close();
        acceptor.join(5_000);
    }

    private void serveOneThenDrop(Socket s) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
        OutputStream out = s.getOutputStream();
        for (int request = 0; ; request++) {
            String line = in.readLine();
            if (line == null) {
                return;
            }
            received.add(line);
            int length = 0;
            for (String h; (h = in.readLine()) != null && !h.isEmpty(); ) {
                if (h.toLowerCase().startsWith("content-length:")) {
                    length = Integer.parseInt(h.substring(15).strip());
                }
            }
            in.skip(length); // ISO-8859-1: one char a byte
            if (request == 1) {
                return; // the second request of a connection: read, never answered
            }
            out.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}".getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
        }
    }

    private PlainHttp client() {
        return new PlainHttp(URI.create("http://127.0.0.1:" + server.getLocalPort()), "token", null, 5_000);
    }

    @Test
    void aGetTheServerDroppedOnAKeptAliveConnectionIsSentAgainOnANewOne() throws IOException {
        try (PlainHttp http = client()) {
            assertThat(http.send("GET", "/health", null).status()).isEqualTo(200);
            assertThat(http.send("GET", "/v1/sandboxes", null).status()).as("answered on a new connection").isEqualTo(200);
        }
        assertThat(received).containsExactly("GET /health HTTP/1.1", "GET /v1/sandboxes HTTP/1.1", "GET /v1/sandboxes HTTP/1.1");
    }

    @Test
    void aPostTheServerDroppedIsNeverSentTwice() throws IOException {
        try (PlainHttp http = client()) {
            assertThat(http.send("GET", "/health", null).status()).isEqualTo(200);
            assertThatThrownBy(() -> http.send("POST", "/v1/sandboxes", "{}"))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("closed the connection before it answered")
                    .hasMessageContaining("a POST is not sent again");
            assertThat(http.send("POST", "/v1/sandboxes", "{}").status()).as("the next POST, on a new connection").isEqualTo(200);
        }
        assertThat(received).containsExactly("GET /health HTTP/1.1", "POST /v1/sandboxes HTTP/1.1", "POST /v1/sandboxes HTTP/1.1");
    }
}
