package dev.airlock.core;

import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.airlock.core.Refusals.invalid;
import static org.assertj.core.api.Assertions.assertThat;

/** Where a sandbox may connect: names, wildcards, ranges and static hosts, strictly parsed. */
class NetworkPolicyTest {

    @Test
    void theDefaultReachesNothingAndNeedsNoProxy() {
        assertThat(NetworkPolicy.NONE.isNone()).isTrue();
        assertThat(NetworkPolicy.NONE.maxConnections()).isZero();
        assertThat(NetworkPolicy.NONE.maxBytes()).isZero();
        assertThat(new SandboxSpec(null, null, null).network()).isEqualTo(NetworkPolicy.NONE);
    }

    @Test
    void aPolicyThatReachesSomethingGetsDefaultBudgets() {
        NetworkPolicy p = NetworkPolicy.of(List.of(Destination.of("example.com", 443)), null, null, null);
        assertThat(p.isNone()).isFalse();
        assertThat(p.maxConnections()).isEqualTo(NetworkPolicy.DEFAULT_MAX_CONNECTIONS);
        assertThat(p.maxBytes()).isEqualTo(NetworkPolicy.DEFAULT_MAX_BYTES);
        assertThat(p.withLimits(3, 1000)).extracting(NetworkPolicy::maxConnections, NetworkPolicy::maxBytes).containsExactly(3, 1000L);
    }

    @Test
    void negativeBudgetsAreRefusedNamingTheField() {
        invalid(() -> NetworkPolicy.NONE.withLimits(-1, 0), "network.maxConnections must not be negative, got -1");
        invalid(() -> NetworkPolicy.NONE.withLimits(0, -5), "network.maxBytes must not be negative, got -5");
    }

    @Test
    void namesAreLowerCasedAndLoseOneTrailingDot() {
        assertThat(Destination.of("API.Example.COM.").host()).isEqualTo("api.example.com");
        assertThat(NetworkPolicy.normalizeName(" *.Example.com ", "f", true)).isEqualTo("*.example.com");
    }

    @Test
    void aNameThatIsNotAHostNameIsRefusedNamingFieldAndLabel() {
        invalid(() -> Destination.of("exa_mple.com"), "network.allow.host: 'exa_mple.com' is not a host name (label 'exa_mple')");
        invalid(() -> Destination.of("-bad.example"), "(label '-bad')");
        invalid(() -> Destination.of("a..b"), "(label '')");
        invalid(() -> Destination.of("example.com.."), "(label '')");
        invalid(() -> Destination.of("x".repeat(64) + ".com"), "is not a host name (label 'xxxx");
        invalid(() -> Destination.of("10.0.0.1:80"), "is not a host name");
        invalid(() -> Destination.of(""), "network.allow.host: an empty host name");
        invalid(() -> Destination.of(null), "an empty host name");
    }

    @Test
    void aNameLongerThanDnsAllowsIsRefused() {
        String label = "a".repeat(63);
        String longest = String.join(".", label, label, label, "a".repeat(61));
        assertThat(Destination.of(longest).host()).hasSize(253);
        invalid(() -> Destination.of(longest + "a"), "is not a host name");
    }

    @Test
    void aWildcardMatchesSubdomainsOnlyNeverTheApexOrALookalike() {
        assertThat(NetworkPolicy.matches("*.example.com", "api.example.com")).isTrue();
        assertThat(NetworkPolicy.matches("*.example.com", "a.b.example.com")).isTrue();
        assertThat(NetworkPolicy.matches("*.example.com", "example.com")).isFalse();
        assertThat(NetworkPolicy.matches("*.example.com", ".example.com")).isFalse();
        assertThat(NetworkPolicy.matches("*.example.com", "evilexample.com")).isFalse();
        assertThat(NetworkPolicy.matches("example.com", "api.example.com")).isFalse();
        assertThat(Destination.of("*.example.com").matchesName("x.example.com")).isTrue();
    }

    @Test
    void aWildcardIsRefusedWhereOnlyANameMayStand() {
        invalid(() -> NetworkPolicy.of(null, null, null, Map.of("*.example.com", List.of("10.0.0.1"))),
                "network.hosts: '*.example.com' may not be a wildcard");
        invalid(() -> Destination.of("*."), "is not a host name");
        invalid(() -> Destination.of("api.*.example.com"), "(label '*')");
    }

    @Test
    void portsOutsideOneTo65535AreRefusedNamingTheDestination() {
        invalid(() -> Destination.of("example.com", 0), "network.allow.ports: 0 is not a port (1-65535) for example.com");
        invalid(() -> Destination.of("example.com", 65536), "65536 is not a port");
        assertThat(Destination.of("example.com", 1, 65535).toString()).isEqualTo("example.com:1,65535");
        assertThat(Destination.of("example.com").anyPort()).isTrue();
        assertThat(Destination.of("example.com").toString()).isEqualTo("example.com:*");
    }

    @Test
    void deniedNamesAreNormalizedLikeAllowedOnes() {
        NetworkPolicy p = NetworkPolicy.of(List.of(Destination.of("*.example.com")), List.of("Admin.Example.com."), null, null);
        assertThat(p.deny()).containsExactly("admin.example.com");
        invalid(() -> NetworkPolicy.of(null, List.of("bad name"), null, null), "network.deny: 'bad name' is not a host name");
    }

    @Test
    void rangesAreCanonicalCidrAndABareAddressIsOneHost() {
        assertThat(new AddressRange("10.1.2.3").toString()).isEqualTo("10.1.2.3/32");
        assertThat(new AddressRange(" 10.0.0.0/8 ").prefix()).isEqualTo(8);
        assertThat(new AddressRange("::1").toString()).isEqualTo("0:0:0:0:0:0:0:1/128");
        assertThat(new AddressRange("[fd00::]/8").prefix()).isEqualTo(8);
        assertThat(new AddressRange("0.0.0.0/0").prefix()).isZero();
    }

    @Test
    void aRangeWithABadPrefixIsRefusedWithTheAllowedPrefixes() {
        invalid(() -> new AddressRange("10.0.0.0/33"), "network.ranges: '10.0.0.0/33' has a prefix length outside 0-32");
        invalid(() -> new AddressRange("::/129"), "outside 0-128");
        invalid(() -> new AddressRange("10.0.0.0/-1"), "outside 0-32");
        invalid(() -> new AddressRange("10.0.0.0/+8"), "outside 0-32");
        invalid(() -> new AddressRange("10.0.0.0/"), "outside 0-32");
        invalid(() -> new AddressRange("10.0.0.0/0008"), "outside 0-32");
        invalid(() -> new AddressRange("10.0.0.0/8/8"), "'10.0.0.0/8/8' is not a CIDR range");
        invalid(() -> new AddressRange(" "), "network.ranges: an empty range");
    }

    @Test
    void aRangeOrHostMustBeAnIpLiteralNeverANameOrAHexForm() {
        invalid(() -> new AddressRange("localhost/8"), "network.ranges: 'localhost' is not an IP address");
        invalid(() -> new AddressRange("metadata.google.internal"), "is not an IP address");
        invalid(() -> new AddressRange("0x7f.0.0.1"), "'0x7f.0.0.1' is not an IP address");
        invalid(() -> new AddressRange("1.2.3.4.5"), "is not an IP address");
        invalid(() -> new AddressRange("256.0.0.1"), "is not an IP address");
        invalid(() -> NetworkPolicy.parseLiteral(null, "f"), "f: 'null' is not an IP address");
    }

    @Test
    void aRangeContainsExactlyTheAddressesUnderItsPrefix() throws Exception {
        AddressRange r = new AddressRange("192.168.4.0/22");
        assertThat(r.contains(InetAddress.getByName("192.168.4.0"))).isTrue();
        assertThat(r.contains(InetAddress.getByName("192.168.7.255"))).isTrue();
        assertThat(r.contains(InetAddress.getByName("192.168.8.0"))).isFalse();
        assertThat(r.contains(InetAddress.getByName("192.168.3.255"))).isFalse();
        assertThat(r.contains(InetAddress.getByName("::ffff:c0a8:0401"))).as("mapped literal is parsed as IPv4 by Java").isTrue();
        assertThat(new AddressRange("fd00::/8").contains(InetAddress.getByName("fd12::1"))).isTrue();
        assertThat(new AddressRange("fd00::/8").contains(InetAddress.getByName("192.168.4.1"))).as("other family").isFalse();
        assertThat(new AddressRange("0.0.0.0/0").contains(InetAddress.getByName("8.8.8.8"))).isTrue();
    }

    @Test
    void staticHostsMapANameToCanonicalLiteralsOnly() {
        Map<String, List<String>> hosts = new LinkedHashMap<>();
        hosts.put("Pypi.Internal.", List.of("10.0.0.7", "[fd00::7]"));
        NetworkPolicy p = NetworkPolicy.of(null, null, null, hosts);
        assertThat(p.hosts()).containsOnlyKeys("pypi.internal");
        assertThat(p.hosts().get("pypi.internal")).containsExactly("10.0.0.7", "fd00:0:0:0:0:0:0:7");
        invalid(() -> NetworkPolicy.of(null, null, null, Map.of("a.example", List.of())), "network.hosts: 'a.example' maps to no address");
        invalid(() -> NetworkPolicy.of(null, null, null, Map.of("a.example", List.of("a.example"))),
                "network.hosts.a.example: 'a.example' is not an IP address");
    }

    @Test
    void aHostileNameIsEchoedPrintableAndShort() {
        invalid(() -> Destination.of("evil\r\n\u001b[31m.com"), "network.allow.host: 'evil???[31m.com' is not a host name");
        invalid(() -> new AddressRange("\u202e".repeat(100_000) + "/8"), "network.ranges: '???", "...' is not an IP address");
        invalid(() -> NetworkPolicy.of(null, null, null, Map.of("\u202ex.com", List.of("10.0.0.1"))), "network.hosts: '?x.com'");
    }

    /** inet_aton reads 0177.0.0.1 as 127.0.0.1 and 10.1 as 10.0.0.1; a policy names an address one way only. */
    @Test
    void aPolicyAddressIsFourDecimalOctetsWithoutLeadingZeros() {
        for (String s : new String[]{"0177.0.0.1", "10.1", "2130706433", "0x7f.0.0.1", "127.0.0.01", "256.0.0.1", "1.2.3.4.5"}) {
            invalid(() -> NetworkPolicy.parseLiteral(s, "network.ranges"), "network.ranges: '" + s + "' is not");
        }
        org.assertj.core.api.Assertions.assertThat(NetworkPolicy.parseLiteral("10.0.0.1", "f").getHostAddress()).isEqualTo("10.0.0.1");
        org.assertj.core.api.Assertions.assertThat(NetworkPolicy.parseLiteral("0.0.0.0", "f").getHostAddress()).isEqualTo("0.0.0.0");
        org.assertj.core.api.Assertions.assertThat(NetworkPolicy.parseLiteral("[::1]", "f").getHostAddress()).isEqualTo("0:0:0:0:0:0:0:1");
    }
}
