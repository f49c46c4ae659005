package dev.airlock.egress;

import dev.airlock.core.AirlockException;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The decision function alone: no connection is made, names resolve through fakes. */
class EgressRulesTest {

    private static final HostResolver PUBLIC = name -> List.of(InetAddress.ofLiteral("93.184.215.14"));
    private static final HostResolver NEVER = name -> {
        throw new AssertionError("resolved " + name + " though the name rules already decided");
    };

    private static NetworkPolicy policy(List<Destination> allow, List<String> deny, List<String> ranges, Map<String, List<String>> hosts) {
        return NetworkPolicy.of(allow, deny, ranges.stream().map(AddressRange::new).toList(), hosts);
    }

    private static EgressRules rules(NetworkPolicy p, HostResolver r) {
        return new EgressRules(p, Set.of(), r);
    }

    @Test
    void exactNamesAndPorts() {
        EgressRules r = rules(policy(List.of(Destination.of("pypi.org", 443), Destination.of("example.com")), List.of(), List.of(), Map.of()), PUBLIC);
        assertThat(r.decide("pypi.org", 443)).isInstanceOf(EgressDecision.Allowed.class)
                .extracting(EgressDecision::rule).isEqualTo("allow pypi.org:443");
        assertThat(((EgressDecision.Allowed) r.decide("PyPI.org.", 443)).address().getHostAddress()).isEqualTo("93.184.215.14");
        assertThat(r.decide("pypi.org", 80).rule()).isEqualTo("port");
        assertThat(r.decide("example.com", 8443).allowed()).isTrue();
        assertThat(r.decide("www.pypi.org", 443).rule()).isEqualTo("default");
        assertThat(r.decide("evil.com", 443).rule()).isEqualTo("default");
    }

    @Test
    void wildcardsMatchSubdomainsNotTheApex() {
        EgressRules r = rules(policy(List.of(Destination.of("*.example.com", 443)), List.of(), List.of(), Map.of()), PUBLIC);
        assertThat(r.decide("a.example.com", 443).allowed()).isTrue();
        assertThat(r.decide("a.b.example.com", 443).allowed()).isTrue();
        assertThat(r.decide("example.com", 443).allowed()).isFalse();
        assertThat(r.decide("badexample.com", 443).allowed()).isFalse();
    }

    @Test
    void denyWinsOverAllow() {
        EgressRules r = rules(policy(List.of(Destination.of("*.example.com")), List.of("secret.example.com", "*.internal.example.com"),
                List.of(), Map.of()), NEVER);
        assertThat(r.decide("secret.example.com", 443).rule()).isEqualTo("deny secret.example.com");
        assertThat(r.decide("db.internal.example.com", 5432).rule()).isEqualTo("deny *.internal.example.com");
    }

    @Test
    void disallowedNamesAreNeverResolved() {
        EgressRules r = rules(policy(List.of(Destination.of("ok.example")), List.of(), List.of(), Map.of()), NEVER);
        assertThat(r.decide("other.example", 80).rule()).isEqualTo("default");
    }

    @Test
    void anAllowedNameThatResolvesToLoopbackIsDeniedUnlessARangeNamesIt() {
        Map<String, List<String>> map = Map.of("test.example", List.of("127.0.0.1"));
        EgressRules without = rules(policy(List.of(Destination.of("test.example")), List.of(), List.of(), map), NEVER);
        assertThat(without.decide("test.example", 80).rule()).isEqualTo("address loopback");
        EgressRules with = rules(policy(List.of(Destination.of("test.example")), List.of(), List.of("127.0.0.0/8"), map), NEVER);
        EgressDecision d = with.decide("test.example", 80);
        assertThat(d.allowed()).isTrue();
        assertThat(d.rule()).isEqualTo("allow test.example:* + range 127.0.0.1/8".replace("127.0.0.1/8", "127.0.0.0/8"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"10.1.2.3", "172.16.5.4", "192.168.1.1", "169.254.1.1", "100.64.0.1", "224.0.0.1", "fd12::1", "fe80::1",
            "169.254.169.254", "fd00:ec2::254", "::1", "0.0.0.0", "::", "64:ff9b::7f00:1", "2002:7f00:1::1", "::7f00:1"})
    void rebindingToInternalAddressesIsDenied(String internal) {
        EgressRules r = rules(policy(List.of(Destination.of("rebind.example")), List.of(), List.of(),
                Map.of("rebind.example", List.of(internal))), NEVER);
        assertThat(r.decide("rebind.example", 443).allowed()).as(internal).isFalse();
        assertThat(r.decide("rebind.example", 443).rule()).startsWith("address");
    }

    @Test
    void oneInternalAnswerAmongPublicOnesDeniesTheName() {
        HostResolver mixed = name -> List.of(InetAddress.ofLiteral("93.184.215.14"), InetAddress.ofLiteral("10.0.0.5"));
        EgressRules r = rules(policy(List.of(Destination.of("mixed.example")), List.of(), List.of(), Map.of()), mixed);
        assertThat(r.decide("mixed.example", 443).rule()).isEqualTo("address private");
    }

    @Test
    void metadataNeedsAnExactRange() {
        assertThat(rules(policy(List.of(), List.of(), List.of("169.254.0.0/16"), Map.of()), NEVER).decide("169.254.169.254", 80).allowed()).isFalse();
        assertThat(rules(policy(List.of(), List.of(), List.of("0.0.0.0/0"), Map.of()), NEVER).decide("169.254.169.254", 80).allowed()).isFalse();
        assertThat(rules(policy(List.of(), List.of(), List.of("169.254.169.254/32"), Map.of()), NEVER).decide("169.254.169.254", 80).allowed()).isTrue();
        assertThat(rules(policy(List.of(), List.of(), List.of("169.254.0.0/16"), Map.of()), NEVER).decide("169.254.1.2", 80).allowed()).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1", "2130706433", "0x7f.1", "0x7f000001", "017700000001", "0177.0.0.1", "127.1", "127.0.1",
            "::ffff:127.0.0.1", "[::ffff:127.0.0.1]", "::ffff:7f00:1", "127.0.0.1."})
    void ipSpellingsAreNormalizedAndNeedARange(String spelling) {
        EgressRules none = rules(policy(List.of(Destination.of("*.example")), List.of(), List.of(), Map.of()), NEVER);
        EgressDecision denied = none.decide(spelling, 80);
        assertThat(denied.allowed()).as(spelling).isFalse();
        assertThat(denied.rule()).isEqualTo("ip-literal");
        EgressRules lo = rules(policy(List.of(), List.of(), List.of("127.0.0.0/8"), Map.of()), NEVER);
        EgressDecision allowed = lo.decide(spelling, 80);
        assertThat(allowed).as(spelling).isInstanceOf(EgressDecision.Allowed.class);
        assertThat(((EgressDecision.Allowed) allowed).address().getHostAddress()).isEqualTo("127.0.0.1");
        assertThat(allowed.rule()).isEqualTo("range 127.0.0.0/8");
    }

    @Test
    void ipv6Literals() {
        EgressRules r = rules(policy(List.of(), List.of(), List.of("::1/128"), Map.of()), NEVER);
        assertThat(r.decide("[::1]", 80).allowed()).isTrue();
        assertThat(r.decide("::1", 80).allowed()).isTrue();
        assertThat(r.decide("[0:0:0:0:0:0:0:1]", 80).allowed()).isTrue();
        assertThat(r.decide("[fe80::1%eth0]", 80).rule()).isEqualTo("malformed-destination");
        assertThat(r.decide("[2001:4860::8888]", 80).rule()).isEqualTo("ip-literal");
        // An IPv4 range does not cover IPv6 loopback, nor the reverse.
        assertThat(rules(policy(List.of(), List.of(), List.of("127.0.0.0/8"), Map.of()), NEVER).decide("[::1]", 80).allowed()).isFalse();
    }

    @ParameterizedTest
    @ValueSource(strings = {"1.2.3.4.5", "256.1.1.1", "0x1g.1", "example.123", "", "a b", "exa_mple.com", "-x.example"})
    void malformedDestinationsAreDenied(String host) {
        EgressRules r = rules(policy(List.of(Destination.of("*.example"), Destination.of("*.com")), List.of(), List.of("0.0.0.0/0"), Map.of()), PUBLIC);
        assertThat(r.decide(host, 80).allowed()).as(host).isFalse();
    }

    @Test
    void theServerItselfIsNeverReachable() {
        NetworkPolicy everything = policy(List.of(Destination.of("test.example")), List.of(), List.of("0.0.0.0/0", "::/0"),
                Map.of("test.example", List.of("127.0.0.1")));
        EgressRules r = new EgressRules(everything, Set.of(new InetSocketAddress("127.0.0.1", 8080),
                new InetSocketAddress(InetAddress.ofLiteral("0.0.0.0"), 9090)), NEVER);
        assertThat(r.decide("127.0.0.1", 8080).rule()).isEqualTo("airlock-server");
        assertThat(r.decide("2130706433", 8080).rule()).isEqualTo("airlock-server");
        assertThat(r.decide("::ffff:127.0.0.1", 8080).rule()).isEqualTo("airlock-server");
        assertThat(r.decide("test.example", 8080).rule()).isEqualTo("airlock-server");
        assertThat(r.decide("127.0.0.1", 8081).allowed()).isTrue();
        // A wildcard listener is every address of this host on its port.
        assertThat(r.decide("127.0.0.1", 9090).rule()).isEqualTo("airlock-server");
        assertThat(r.decide("127.0.0.2", 9090).rule()).isEqualTo("airlock-server");
        assertThat(r.decide("::1", 9090).rule()).isEqualTo("airlock-server");
        assertThat(r.decide("0.0.0.0", 9090).rule()).isEqualTo("airlock-server");
        assertThat(r.decide("0.0.0.0", 1234).allowed()).isFalse();
    }

    @Test
    void nameMapComesBeforeTheResolverAndResolverFailuresDeny() {
        HostResolver failing = name -> {
            throw new UnknownHostException(name);
        };
        EgressRules r = rules(policy(List.of(Destination.of("*.example")), List.of(), List.of("127.0.0.0/8"),
                Map.of("mapped.example", List.of("127.0.0.7"))), failing);
        assertThat(((EgressDecision.Allowed) r.decide("mapped.example", 80)).address().getHostAddress()).isEqualTo("127.0.0.7");
        assertThat(r.decide("unmapped.example", 80).rule()).isEqualTo("resolve");
    }

    @Test
    void recheckUsesTheConnectedAddressWithoutResolving() {
        NetworkPolicy p = policy(List.of(Destination.of("test.example")), List.of(), List.of("127.0.0.0/8"),
                Map.of("test.example", List.of("127.0.0.1")));
        EgressRules r = rules(p, NEVER);
        InetAddress lo = InetAddress.getLoopbackAddress();
        assertThat(r.recheck("test.example", 80, lo).allowed()).isTrue();
        EgressRules revoked = r.withPolicy(policy(List.of(Destination.of("test.example")), List.of(), List.of(), Map.of()));
        assertThat(revoked.recheck("test.example", 80, lo).rule()).isEqualTo("address loopback");
        assertThat(r.withPolicy(NetworkPolicy.NONE).recheck("test.example", 80, lo).rule()).isEqualTo("default");
    }

    @Test
    void policyValidationNamesTheField() {
        assertThatThrownBy(() -> Destination.of("bad_name.com")).isInstanceOf(AirlockException.class).hasMessageContaining("network.allow.host");
        assertThatThrownBy(() -> Destination.of("ok.com", 70000)).hasMessageContaining("network.allow.ports");
        assertThatThrownBy(() -> new AddressRange("10.0.0.0/33")).hasMessageContaining("network.ranges");
        assertThatThrownBy(() -> new AddressRange("example.com/8")).hasMessageContaining("network.ranges");
        assertThatThrownBy(() -> NetworkPolicy.of(List.of(), List.of("*"), List.of(), Map.of())).hasMessageContaining("network.deny");
        assertThatThrownBy(() -> NetworkPolicy.of(List.of(), List.of(), List.of(), Map.of("x.example", List.of("localhost"))))
                .hasMessageContaining("network.hosts");
        assertThatThrownBy(() -> NetworkPolicy.of(List.of(), List.of(), List.of(), Map.of("*.x.example", List.of("127.0.0.1"))))
                .hasMessageContaining("network.hosts");
        assertThatThrownBy(() -> new NetworkPolicy(List.of(), List.of(), List.of(), Map.of(), -1, 0)).hasMessageContaining("network.maxConnections");
        assertThat(new AddressRange("10.1.2.3/8").cidr()).isEqualTo("10.1.2.3/8");
        assertThat(NetworkPolicy.NONE.isNone()).isTrue();
    }
}
