package dev.airlock.egress;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One exchange on its own, between a real unix socket (the sandbox) and a real origin on
 * 127.0.0.1: exactly the announced body goes upstream, and what the sandbox smuggles behind it
 * stays unread.
 */
class ExchangeTest {

    static final String SMUGGLED = "GET http://metadata.internal/ HTTP/1.1\r\n\r\n";

    @TempDir
    Path tmp;
    ServerSocket origin;
    SocketPair pair;
    EgressConnection c;

    @BeforeEach
    void open() throws Exception {
        origin = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        pair = SocketPair.open(tmp, 1024);
        EgressRules rules = new EgressRules(EgressProxyTest.loopbackPolicy(List.of(), List.of()), Set.of(), HostResolver.NONE);
        c = pair.connection(() -> rules, new SandboxBudget());
    }

    @AfterEach
    void close() throws Exception {
        origin.close();
        pair.close();
    }

    /** The origin reads {@code requestBytes} bytes, answers, closes; what it read. */
    CompletableFuture<String> originReading(int requestBytes) {
        return CompletableFuture.supplyAsync(() -> {
            try (Socket s = origin.accept()) {
                byte[] got = s.getInputStream().readNBytes(requestBytes);
                s.getOutputStream().write("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                return new String(got, StandardCharsets.ISO_8859_1);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
    }

    String exchange(String head, long length, String fromSandbox, int originReads) throws Exception {
        CompletableFuture<String> received = originReading(originReads);
        // The sandbox ends its side, so a stage that read too far leaves nothing to find, rather than a wait.
        pair.sendAndEnd(fromSandbox.getBytes(StandardCharsets.ISO_8859_1));
        try (Socket upstream = new Socket(origin.getInetAddress(), origin.getLocalPort())) {
            new Exchange("sb-x", 1024).run(c, head.getBytes(StandardCharsets.ISO_8859_1), length, List.of("cred"), pair.proxySide.input(),
                    pair.proxySide.output(), upstream.getInputStream(), upstream.getOutputStream());
        }
        return received.get(30, TimeUnit.SECONDS);
    }

    /** What is still unread on the sandbox's side of the connection, up to {@code n} bytes. */
    String unread(int n) throws Exception {
        InputStream in = pair.proxySide.input();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        while (out.size() < n) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            out.write(b);
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    @Test
    void aPipelinedRequestBehindAnAnnouncedBodyNeverReachesUpstream() throws Exception {
        String head = "POST /upload HTTP/1.1\r\nHost: test.example\r\nContent-Length: 5\r\nConnection: close\r\n\r\n";
        String received = exchange(head, 5, "hello" + SMUGGLED, head.length() + 5);
        assertThat(received).isEqualTo(head + "hello");
        assertThat(unread(SMUGGLED.length())).isEqualTo(SMUGGLED);
        EgressRecord r = c.record.toRecord("sb-x", c.cutBy());
        assertThat(r.bytesUp()).isEqualTo(head.length() + 5);
        assertThat(r.credentials()).containsExactly("cred");
    }

    @Test
    void aChunkedBodyEndsAtItsLastChunkAndWhatFollowsStaysUnread() throws Exception {
        String head = "POST /upload HTTP/1.1\r\nHost: test.example\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
        String body = "5\r\nhello\r\n0\r\n\r\n";
        String received = exchange(head, -1, body + SMUGGLED, head.length() + body.length());
        assertThat(received).isEqualTo(head + body);
        assertThat(unread(SMUGGLED.length())).isEqualTo(SMUGGLED);
    }
}
