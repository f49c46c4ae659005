package dev.airlock.core.contract;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.PortConnection;
import dev.airlock.core.Sandbox;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Inbound port streams ({@link dev.airlock.core.SandboxAgent#connect}): a server the code starts on
 * the sandbox's loopback is reached from the host through the agent's own channel, with no network
 * device, on every driver the same (over the microVM's virtio-serial control port too); a port
 * nothing listens on is refused with a clear error.
 */
public abstract class InboundPortsContract extends ContractTestBase {

    private static final Duration AWAIT = Duration.ofSeconds(60);
    private static final int PORT = 8000;
    private static final String SITE = ExecRequest.DEFAULT_CWD + "/site";

    protected InboundPortsContract(DriverContract driver) {
        super(driver);
    }

    /** Starts python's http.server on 127.0.0.1:{@value #PORT} serving {@value #SITE}, and waits until it accepts. */
    private static void startHttpServer(Sandbox sb) throws Exception {
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        OutputListener listener = new OutputListener() {
            @Override
            public synchronized void stdout(byte[] chunk) {
                log.writeBytes(chunk);
            }

            @Override
            public synchronized void stderr(byte[] chunk) {
                log.writeBytes(chunk);
            }
        };
        sb.startAttached(new ExecRequest(List.of("python3", "-m", "http.server", String.valueOf(PORT), "--bind", "127.0.0.1",
                "--directory", SITE), Map.of(), ExecRequest.DEFAULT_CWD, null, Duration.ofSeconds(300)), listener);
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (true) {
            try (PortConnection probe = sb.files().connect(PORT)) {
                return;
            } catch (PortConnection.RefusedException e) {
                synchronized (listener) {
                    assertThat(System.nanoTime()).as("waiting for the http.server to listen; it said: %s",
                            log.toString(StandardCharsets.UTF_8)).isLessThan(deadline);
                }
                Thread.sleep(100);
            }
        }
    }

    /** GET {@code path} over HTTP/1.0 (the server closes after its answer): the whole answer, head and body. */
    private static byte[] get(Sandbox sb, String path) throws Exception {
        try (PortConnection connection = sb.files().connect(PORT)) {
            connection.output().write(("GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            connection.output().close();
            return connection.input().readAllBytes();
        }
    }

    private static byte[] body(byte[] answer) {
        String text = new String(answer, StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        assertThat(end).as("the end of the HTTP head in %s", text.substring(0, Math.min(text.length(), 300))).isPositive();
        return java.util.Arrays.copyOfRange(answer, end + 4, answer.length);
    }

    @Test
    @Tag("smoke")
    void aPageServedInsideIsReadFromTheHost() throws Exception {
        try (Sandbox sb = engine.create(spec())) {
            sb.writeFile(SITE + "/index.html", "<h1>hello from inside</h1>\n".getBytes(StandardCharsets.UTF_8));
            startHttpServer(sb);

            byte[] answer = get(sb, "/index.html");

            assertThat(new String(answer, StandardCharsets.ISO_8859_1)).startsWith("HTTP/1.0 200");
            assertThat(new String(body(answer), StandardCharsets.UTF_8)).isEqualTo("<h1>hello from inside</h1>\n");
        }
    }

    /** Many windows' worth, through the driver's channel and back-pressured by credits, arrives whole. */
    @Test
    void aLargeFileComesWholeThroughTheWindow() throws Exception {
        try (Sandbox sb = engine.create(spec())) {
            byte[] content = new byte[3 * 1024 * 1024];
            new java.util.Random(7).nextBytes(content);
            sb.writeFile(SITE + "/big.bin", content);
            startHttpServer(sb);

            byte[] body = body(get(sb, "/big.bin"));

            assertThat(body.length).isEqualTo(content.length);
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            assertThat(HexFormat.of().formatHex(sha.digest(body)))
                    .isEqualTo(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(content)));
        }
    }

    @Test
    void aPortNothingListensOnIsRefusedClearly() {
        try (Sandbox sb = engine.create(spec())) {
            assertThatThrownBy(() -> sb.files().connect(PORT))
                    .isInstanceOfSatisfying(PortConnection.RefusedException.class, e -> assertThat(e.errno()).isEqualTo("ECONNREFUSED"))
                    .hasMessage("cannot connect to port " + PORT + " in the sandbox: nothing listens on 127.0.0.1:" + PORT + " (ECONNREFUSED)");
            assertThat(sb.isOpen()).isTrue();
        }
    }
}
