package dev.airlock.egress;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The CONNECT and forward handshakes on their own, fed what a hostile client would send, over a real unix socket. */
class HttpHandshakeTest {

    static final int BOUND = 1024;

    @TempDir
    Path tmp;

    HandshakeOutcome handshake(String bytes) throws IOException {
        try (SocketPair pair = SocketPair.open(tmp, BOUND)) {
            pair.send(bytes.getBytes(StandardCharsets.ISO_8859_1));
            return HttpHandshake.read(pair.proxySide, BOUND);
        }
    }

    HandshakeOutcome.Rejected rejected(String bytes) throws IOException {
        HandshakeOutcome outcome = handshake(bytes);
        assertThat(outcome).isInstanceOf(HandshakeOutcome.Rejected.class);
        return (HandshakeOutcome.Rejected) outcome;
    }

    static String answer(HandshakeOutcome.Rejected r) {
        return new String(r.answer(), StandardCharsets.UTF_8);
    }

    @Test
    void connectParsesIntoATunnelRequest() throws Exception {
        EgressRequest asked = (EgressRequest) handshake("CONNECT Test.Example:8443 HTTP/1.1\r\nHost: test.example:8443\r\n\r\n");
        assertThat(asked.protocol()).isEqualTo(EgressProtocol.HTTP_CONNECT);
        assertThat(asked.isTunnel()).isTrue();
        assertThat(asked.destination()).isEqualTo("test.example");
        assertThat(asked.port()).isEqualTo(8443);
    }

    @Test
    void aForwardRequestParsesWithItsBodyLeftUnread() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, BOUND)) {
            pair.send("POST http://test.example/a?b HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody".getBytes(StandardCharsets.ISO_8859_1));
            EgressRequest asked = (EgressRequest) HttpHandshake.read(pair.proxySide, BOUND);
            assertThat(asked.protocol()).isEqualTo(EgressProtocol.HTTP_FORWARD);
            assertThat(asked.port()).isEqualTo(80);
            assertThat(asked.forward().originPath()).isEqualTo("/a?b");
            assertThat(asked.authority()).isEqualTo(new HttpHead.Authority("test.example", 80));
            byte[] body = new byte[4];
            assertThat(pair.proxySide.input().readNBytes(body, 0, 4)).isEqualTo(4);
            assertThat(new String(body, StandardCharsets.ISO_8859_1)).isEqualTo("body");
        }
    }

    @Test
    void aHeadLargerThanItsBoundIsRefusedAsMalformed() throws Exception {
        HandshakeOutcome.Rejected r = rejected("GET http://test.example/ HTTP/1.1\r\nX-Pad: " + "a".repeat(4 * BOUND) + "\r\n\r\n");
        assertThat(r.rule()).isEqualTo("http: malformed request");
        assertThat(r.protocol()).isEqualTo("http");
        assertThat(answer(r)).startsWith("HTTP/1.1 400 ").contains("larger than " + BOUND);
    }

    @Test
    void aHeadCutShortIsAnErrorNeverARequest() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, BOUND)) {
            pair.sendAndEnd("CONNECT test.example:443 HTTP/1.1\r\nHost: test.exa".getBytes(StandardCharsets.ISO_8859_1));
            assertThatThrownBy(() -> HttpHandshake.read(pair.proxySide, BOUND)).isInstanceOf(IOException.class);
        }
    }

    @Test
    void aNulByteFoldedHeadersOrAnotherHttpVersionAreMalformed() throws Exception {
        assertThat(rejected("GET http://test.example/ HTTP/1.1\r\nX: a\0b\r\n\r\n").rule()).isEqualTo("http: malformed request");
        assertThat(rejected("GET http://test.example/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n").rule()).isEqualTo("http: malformed request");
        assertThat(rejected("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").rule()).isEqualTo("http: malformed request");
        assertThat(rejected("G\u00c9T http://test.example/ HTTP/1.1\r\n\r\n").rule()).isEqualTo("http: malformed request");
    }

    @Test
    void connectWithoutAPortOrWithUserInfoIsABadRequestNamingNoDestination() throws Exception {
        for (String target : new String[] {"test.example", "user:pw@test.example:443", "test.example:0", "test.example:65536", "::1:443"}) {
            HandshakeOutcome.Rejected r = rejected("CONNECT " + target + " HTTP/1.1\r\n\r\n");
            assertThat(r.protocol()).isEqualTo("http-connect");
            assertThat(r.destination()).as(target).isNull();
            assertThat(answer(r)).startsWith("HTTP/1.1 400 ").contains("X-Airlock-Rule: http: bad request");
        }
    }

    @Test
    void aHostHeaderNamingAnotherHostIsRefusedAndTheRecordKeepsTheTarget() throws Exception {
        HandshakeOutcome.Rejected r = rejected("CONNECT test.example:443 HTTP/1.1\r\nHost: metadata.internal:443\r\n\r\n");
        assertThat(r.destination()).isEqualTo("test.example");
        assertThat(r.port()).isEqualTo(443);
        assertThat(r.rule()).contains("differs from the request target");
        HandshakeOutcome.Rejected twice = rejected("GET http://test.example/ HTTP/1.1\r\nHost: test.example\r\nHost: test.example\r\n\r\n");
        assertThat(twice.rule()).isEqualTo("http: more than one Host header");
    }

    @Test
    void aForwardRequestNeedsAnAbsoluteHttpTarget() throws Exception {
        assertThat(rejected("GET https://test.example/ HTTP/1.1\r\n\r\n").rule()).contains("need a CONNECT tunnel");
        assertThat(rejected("GET /relative HTTP/1.1\r\nHost: test.example\r\n\r\n").rule()).contains("needs an absolute http:// target");
        assertThat(rejected("GET http://user@test.example/ HTTP/1.1\r\n\r\n").rule()).contains("user info is not accepted");
    }

    @Test
    void theRefusalNeverEchoesRawControlBytes() throws Exception {
        HandshakeOutcome.Rejected r = rejected("CONNECT test.example:443 HTTP/1.1\r\nHost: a\u001b[31mb:443\r\n\r\n");
        assertThat(answer(r)).doesNotContain("\u001b");
        assertThat(r.rule()).doesNotContain("\u001b");
    }
}
