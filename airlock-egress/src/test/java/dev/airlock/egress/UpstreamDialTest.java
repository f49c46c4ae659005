package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The upstream dial on its own, against a real listener on 127.0.0.1: exactly the admitted address, then the newest rules again. */
class UpstreamDialTest {

    @TempDir
    Path tmp;
    ServerSocket upstream;
    SocketPair pair;
    final SandboxBudget budget = new SandboxBudget();

    @BeforeEach
    void listen() throws Exception {
        upstream = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        pair = SocketPair.open(tmp, 1024);
    }

    @AfterEach
    void stop() throws Exception {
        upstream.close();
        pair.close();
    }

    /** The name maps to {@code address}; 127.0.0.0/8 is named, so loopback may be reached. */
    NetworkPolicy policy(String name, String address) {
        return NetworkPolicy.of(List.of(Destination.of(name, upstream.getLocalPort())), List.of(), List.of(new AddressRange("127.0.0.0/8")),
                Map.of(name, List.of(address)));
    }

    static EgressRules rules(NetworkPolicy policy) {
        return new EgressRules(policy, Set.of(), HostResolver.NONE);
    }

    record Setup(EgressRequest asked, Admission.Admitted admitted) {
    }

    Setup admit(EgressRules rules) throws EgressRefusal {
        EgressRequest asked = EgressRequest.tunnel(EgressProtocol.HTTP_CONNECT, "test.example", upstream.getLocalPort());
        return new Setup(asked, new Admission(() -> rules, budget).admit(asked));
    }

    @Test
    void connectsToExactlyTheAdmittedAddress() throws Exception {
        EgressRules rules = rules(policy("test.example", "127.0.0.1"));
        Setup s = admit(rules);
        EgressConnection c = pair.connection(() -> rules, budget);
        try (Socket dialed = new UpstreamDial(() -> rules, Duration.ofSeconds(5)).dial(c, s.asked(), s.admitted());
             Socket accepted = upstream.accept()) {
            assertThat(dialed.isConnected()).isTrue();
            assertThat(c.upstream()).isSameAs(dialed);
            assertThat(accepted.getPort()).isEqualTo(dialed.getLocalPort());
        }
    }

    @Test
    void aNameRemappedAfterAdmissionIsNotResolvedAgain() throws Exception {
        EgressRules before = rules(policy("test.example", "127.0.0.1"));
        Setup s = admit(before);
        // The name now points elsewhere, but the range still allows the admitted address: the dial goes where admission said.
        EgressRules after = rules(policy("test.example", "127.0.0.2"));
        try (Socket dialed = new UpstreamDial(() -> after, Duration.ofSeconds(5)).dial(pair.connection(() -> after, budget), s.asked(),
                s.admitted())) {
            assertThat(((InetSocketAddress) dialed.getRemoteSocketAddress()).getAddress()).isEqualTo(InetAddress.getByName("127.0.0.1"));
        }
    }

    @Test
    void aPolicyThatDroppedTheNameSinceAdmissionRefusesAndClosesTheSocket() throws Exception {
        Setup s = admit(rules(policy("test.example", "127.0.0.1")));
        EgressRules revoked = rules(NetworkPolicy.of(List.of(Destination.of("other.example", 443)), List.of(),
                List.of(new AddressRange("127.0.0.0/8")), Map.of("other.example", List.of("127.0.0.1"))));
        EgressConnection c = pair.connection(() -> revoked, budget);
        assertThatThrownBy(() -> new UpstreamDial(() -> revoked, Duration.ofSeconds(5)).dial(c, s.asked(), s.admitted()))
                .isInstanceOfSatisfying(EgressRefusal.class, r -> {
                    assertThat(r.httpStatus).isEqualTo(403);
                    assertThat(r.socksReply).isEqualTo(Socks5Handshake.NOT_ALLOWED);
                    assertThat(r.rule).isNotEqualTo(s.admitted().rule());
                });
        assertThat(c.upstream().isClosed()).isTrue();
    }

    @Test
    void aPolicyThatDroppedTheAddressRangeSinceAdmissionRefuses() throws Exception {
        Setup s = admit(rules(policy("test.example", "127.0.0.1")));
        EgressRules noLoopback = rules(NetworkPolicy.of(List.of(Destination.of("test.example", upstream.getLocalPort())), List.of(),
                List.of(), Map.of("test.example", List.of("127.0.0.1"))));
        EgressConnection c = pair.connection(() -> noLoopback, budget);
        assertThatThrownBy(() -> new UpstreamDial(() -> noLoopback, Duration.ofSeconds(5)).dial(c, s.asked(), s.admitted()))
                .isInstanceOf(EgressRefusal.class);
        assertThat(c.upstream().isClosed()).isTrue();
    }

    @Test
    void aRefusedConnectIs502AndSocksConnectionRefusedNamingTheAddressNotTheName() throws Exception {
        EgressRules rules = rules(policy("test.example", "127.0.0.1"));
        Setup s = admit(rules);
        upstream.close();
        EgressConnection c = pair.connection(() -> rules, budget);
        assertThatThrownBy(() -> new UpstreamDial(() -> rules, Duration.ofSeconds(5)).dial(c, s.asked(), s.admitted()))
                .isInstanceOfSatisfying(EgressRefusal.class, r -> {
                    assertThat(r.httpStatus).isEqualTo(502);
                    assertThat(r.socksReply).isEqualTo(Socks5Handshake.CONNECTION_REFUSED);
                    assertThat(r.rule).isEqualTo(s.admitted().rule());
                    assertThat(r.getMessage()).contains("127.0.0.1:" + s.asked().port());
                });
        assertThat(c.upstream().isClosed()).isTrue();
    }
}
