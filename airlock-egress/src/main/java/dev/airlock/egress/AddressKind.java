package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy.AddressRange;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

/**
 * Address classes that a policy must name explicitly (by a range) before the proxy connects to
 * them, because they reach the host, its network, or a cloud's metadata service rather than "the
 * internet". {@link #PUBLIC} needs no range when reached by an allowed name.
 */
enum AddressKind {
    PUBLIC, LOOPBACK, PRIVATE, LINK_LOCAL, METADATA, MULTICAST, UNSPECIFIED, CARRIER_GRADE_NAT, RESERVED;

    private static final List<AddressRange> METADATA_RANGES = ranges("169.254.169.254/32", "fd00:ec2::254/128", "100.100.100.200/32");
    private static final List<AddressRange> PRIVATE_RANGES = ranges("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7");
    private static final List<AddressRange> CGNAT = ranges("100.64.0.0/10");
    // Benchmarking, documentation, 240/4 (reserved), broadcast, the IPv4 "this network" block,
    // 192.0.0.0/24 (protocol assignments); IPv6 discard, documentation, site-local (deprecated).
    private static final List<AddressRange> RESERVED_RANGES = ranges("0.0.0.0/8", "192.0.0.0/24", "198.18.0.0/15",
            "240.0.0.0/4", "255.255.255.255/32", "100::/64", "2001:db8::/32", "fec0::/10");

    static AddressKind of(InetAddress address) {
        if (contains(METADATA_RANGES, address)) {
            return METADATA;
        }
        if (address.isAnyLocalAddress()) {
            return UNSPECIFIED;
        }
        if (address.isLoopbackAddress()) {
            return LOOPBACK;
        }
        if (address.isLinkLocalAddress()) {
            return LINK_LOCAL;
        }
        if (address.isMulticastAddress()) {
            return MULTICAST;
        }
        if (contains(PRIVATE_RANGES, address)) {
            return PRIVATE;
        }
        if (contains(CGNAT, address)) {
            return CARRIER_GRADE_NAT;
        }
        if (contains(RESERVED_RANGES, address)) {
            return RESERVED;
        }
        return PUBLIC;
    }

    /**
     * The IPv4 address an IPv6 address carries, for the forms that a host's stack or a gateway
     * turns into IPv4 traffic (IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16), or
     * null. IPv4-mapped addresses are already Inet4Address in Java.
     */
    static Inet4Address embeddedIpv4(InetAddress address) {
        if (!(address instanceof Inet6Address)) {
            return null;
        }
        byte[] b = address.getAddress();
        boolean zero96 = true;
        for (int i = 0; i < 12; i++) {
            zero96 &= b[i] == 0;
        }
        boolean nat64 = (b[0] & 0xff) == 0x00 && (b[1] & 0xff) == 0x64 && (b[2] & 0xff) == 0xff && (b[3] & 0xff) == 0x9b;
        for (int i = 4; nat64 && i < 12; i++) {
            nat64 = b[i] == 0;
        }
        try {
            if (zero96 && !(b[12] == 0 && b[13] == 0 && b[14] == 0 && (b[15] & 0xfe) == 0)) {
                return (Inet4Address) InetAddress.getByAddress(new byte[] {b[12], b[13], b[14], b[15]});
            }
            if (nat64) {
                return (Inet4Address) InetAddress.getByAddress(new byte[] {b[12], b[13], b[14], b[15]});
            }
            if ((b[0] & 0xff) == 0x20 && (b[1] & 0xff) == 0x02) {
                return (Inet4Address) InetAddress.getByAddress(new byte[] {b[2], b[3], b[4], b[5]});
            }
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
        return null;
    }

    private static boolean contains(List<AddressRange> ranges, InetAddress address) {
        for (AddressRange r : ranges) {
            if (r.contains(address)) {
                return true;
            }
        }
        return false;
    }

    private static List<AddressRange> ranges(String... cidrs) {
        return java.util.Arrays.stream(cidrs).map(AddressRange::new).toList();
    }
}
