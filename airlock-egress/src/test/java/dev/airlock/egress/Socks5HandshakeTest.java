package dev.airlock.egress;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The SOCKS5 handshake on its own, fed what a hostile client would send, over a real unix socket. */
class Socks5HandshakeTest {

    static final byte[] GREETING = {5, 1, 0};

    @TempDir
    Path tmp;

    static byte[] request(int command, int type, byte[] address, int port) {
        ByteBuffer b = ByteBuffer.allocate(6 + address.length);
        b.put(new byte[] {5, (byte) command, 0, (byte) type}).put(address).putShort((short) port);
        return b.array();
    }

    static byte[] name(String host) {
        byte[] n = host.getBytes(StandardCharsets.ISO_8859_1);
        byte[] out = new byte[n.length + 1];
        out[0] = (byte) n.length;
        System.arraycopy(n, 0, out, 1, n.length);
        return out;
    }

    static byte[] concat(byte[]... parts) {
        ByteBuffer b = ByteBuffer.allocate(java.util.Arrays.stream(parts).mapToInt(p -> p.length).sum());
        for (byte[] p : parts) {
            b.put(p);
        }
        return b.array();
    }

    HandshakeOutcome handshake(SocketPair pair) throws IOException {
        assertThat(pair.proxySide.awaitByte()).isTrue();
        return Socks5Handshake.read(pair.proxySide);
    }

    @Test
    void aConnectByNameParsesIntoOneRequestAndBytesBehindItStayForTheRelay() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, 1024)) {
            pair.send(concat(GREETING, request(1, 3, name("Api.Example.COM."), 443), "early".getBytes(StandardCharsets.ISO_8859_1)));
            EgressRequest asked = (EgressRequest) handshake(pair);
            assertThat(asked.protocol()).isEqualTo(EgressProtocol.SOCKS5);
            assertThat(asked.requestedHost()).isEqualTo("Api.Example.COM.");
            assertThat(asked.destination()).isEqualTo("api.example.com");
            assertThat(asked.port()).isEqualTo(443);
            assertThat(asked.isTunnel()).isTrue();
            assertThat(pair.proxySide.buffered().remaining()).isEqualTo(5);
            assertThat(pair.answerAfterClose()).containsExactly(5, 0);
        }
    }

    @Test
    void ipv4AndIpv6AddressesBecomeLiteralsTheRulesDecideOn() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, 1024)) {
            pair.send(concat(GREETING, request(1, 1, new byte[] {10, 0, 0, 1}, 80)));
            assertThat(((EgressRequest) handshake(pair)).requestedHost()).isEqualTo("10.0.0.1");
        }
        try (SocketPair pair = SocketPair.open(tmp, 1024)) {
            byte[] v6 = new byte[16];
            v6[15] = 1;
            pair.send(concat(GREETING, request(1, 4, v6, 80)));
            assertThat(((EgressRequest) handshake(pair)).requestedHost()).isEqualTo("[0:0:0:0:0:0:0:1]");
        }
    }

    @Test
    void aClientOfferingOnlyPasswordAuthenticationIsToldNoMethodIsAcceptable() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, 1024)) {
            pair.send(new byte[] {5, 1, 2});
            HandshakeOutcome.Rejected r = (HandshakeOutcome.Rejected) handshake(pair);
            assertThat(r.rule()).isEqualTo("socks: no acceptable authentication method");
            assertThat(r.answer()).containsExactly(5, 0xff);
            assertThat(r.destination()).isNull();
        }
    }

    @Test
    void aGreetingWithZeroMethodsOffersNothingAcceptable() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, 1024)) {
            pair.send(new byte[] {5, 0});
            assertThat(((HandshakeOutcome.Rejected) handshake(pair)).answer()).containsExactly(5, 0xff);
        }
    }

    @Test
    void aWrongVersionInTheRequestIsRefusedWithoutAReply() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, 1024)) {
            pair.send(concat(GREETING, new byte[] {4, 1, 0, 1, 127, 0, 0, 1, 0, 80}));
            HandshakeOutcome.Rejected r = (HandshakeOutcome.Rejected) handshake(pair);
            assertThat(r.rule()).isEqualTo("socks: bad version");
            assertThat(r.answer()).isNull();
        }
    }

    @Test
    void bindAndUdpAssociateAreRefusedAsCommandsNotSupported() throws Exception {
        for (int command : new int[] {2, 3, 0, 0xff}) {
            try (SocketPair pair = SocketPair.open(tmp, 1024)) {
                pair.send(concat(GREETING, request(command, 3, name("test.example"), 80)));
                HandshakeOutcome.Rejected r = (HandshakeOutcome.Rejected) handshake(pair);
                assertThat(r.rule()).isEqualTo("socks: only CONNECT is supported");
                assertThat(r.answer()).containsExactly(Socks5Handshake.reply(Socks5Handshake.COMMAND_NOT_SUPPORTED));
                assertThat(r.destination()).isEqualTo("test.example");
            }
        }
    }

    @Test
    void anUnknownAddressTypeIsRefusedWithAddressTypeNotSupported() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, 1024)) {
            pair.send(concat(GREETING, new byte[] {5, 1, 0, 2, 1, 2, 3, 4, 0, 80}));
            HandshakeOutcome.Rejected r = (HandshakeOutcome.Rejected) handshake(pair);
            assertThat(r.rule()).isEqualTo("socks: address type 2 not supported");
            assertThat(r.answer()).containsExactly(Socks5Handshake.reply(Socks5Handshake.ADDRESS_TYPE_NOT_SUPPORTED));
        }
    }

    @Test
    void aRequestCutShortAnywhereEndsInAnErrorNeverInARequest() throws Exception {
        byte[] whole = concat(GREETING, request(1, 3, name("test.example"), 443));
        for (int cut = 1; cut < whole.length; cut++) {
            try (SocketPair pair = SocketPair.open(tmp, 1024)) {
                pair.sendAndEnd(java.util.Arrays.copyOf(whole, cut));
                assertThatThrownBy(() -> handshake(pair)).as("cut after %d bytes", cut)
                        .isInstanceOf(IOException.class).hasMessageContaining("end of stream");
            }
        }
    }

    @Test
    void aNameWithControlBytesIsParsedButTheRulesNeverSeeAName() throws Exception {
        try (SocketPair pair = SocketPair.open(tmp, 1024)) {
            pair.send(concat(GREETING, request(1, 3, name("evil.example\r\nX-Injected: 1"), 80)));
            EgressRequest asked = (EgressRequest) handshake(pair);
            EgressRules rules = new EgressRules(EgressProxyTest.loopbackPolicy(java.util.List.of(
                    dev.airlock.core.NetworkPolicy.Destination.of("*.example")), java.util.List.of()), java.util.Set.of(), HostResolver.NONE);
            assertThat(rules.decide(asked.requestedHost(), asked.port()).allowed()).isFalse();
        }
    }

    @Test
    void theLongestGreetingAndNameFitAHandshakeBoundSmallerThanThem() throws Exception {
        byte[] methods = new byte[257];
        methods[0] = 5;
        methods[1] = (byte) 255;
        methods[256] = 0;
        try (SocketPair pair = SocketPair.open(tmp, 64)) {
            pair.send(concat(methods, request(1, 3, name("a".repeat(63) + "." + "b".repeat(63) + "." + "c".repeat(63) + ".example"), 443)));
            EgressRequest asked = (EgressRequest) handshake(pair);
            assertThat(asked.destination()).endsWith(".example").hasSize(63 * 3 + 3 + 7);
        }
    }
}
