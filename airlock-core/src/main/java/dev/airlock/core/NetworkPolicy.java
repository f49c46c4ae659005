package dev.airlock.core;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Where a sandbox may connect, enforced by the host's egress proxy (airlock-egress). Validated at
 * construction; every error names the field.
 *
 * <ul>
 *   <li>{@code allow}: destinations by name ({@code example.com} exactly, or {@code *.example.com}
 *       for any subdomain, not the apex) with the ports they may be reached on (empty: any);</li>
 *   <li>{@code deny}: names (exact or {@code *.} wildcard) that are refused even when allowed;</li>
 *   <li>{@code ranges}: address ranges in CIDR form. The only way to reach an IP literal, and the
 *       only way an allowed name may resolve to a loopback, private, link-local, multicast,
 *       carrier-grade NAT or metadata address;</li>
 *   <li>{@code hosts}: a static name map (like curl's --resolve), consulted before the host's
 *       resolver; values are IP literals;</li>
 *   <li>{@code maxConnections}: connections open at once; {@code maxBytes}: bytes both ways over
 *       the sandbox's life; 0 for either means its default ({@value #DEFAULT_MAX_CONNECTIONS}
 *       connections, 4 GiB).</li>
 * </ul>
 */
public record NetworkPolicy(List<Destination> allow, List<String> deny, List<AddressRange> ranges,
                            Map<String, List<String>> hosts, int maxConnections, long maxBytes) {

    public static final int DEFAULT_MAX_CONNECTIONS = 64;
    public static final long DEFAULT_MAX_BYTES = 4L << 30;

    /** No network at all: the default. */
    public static final NetworkPolicy NONE = new NetworkPolicy(List.of(), List.of(), List.of(), Map.of(), 0, 0);

    private static final Pattern LABEL = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");

    public NetworkPolicy {
        allow = allow == null ? List.of() : List.copyOf(allow);
        deny = deny == null ? List.of() : deny.stream().map(d -> normalizeName(d, "network.deny", true)).toList();
        ranges = ranges == null ? List.of() : List.copyOf(ranges);
        Map<String, List<String>> copy = new LinkedHashMap<>();
        if (hosts != null) {
            hosts.forEach((name, addresses) -> {
                String n = normalizeName(name, "network.hosts", false);
                if (addresses == null || addresses.isEmpty()) {
                    throw AirlockException.invalid("network.hosts: '" + Printable.of(name) + "' maps to no address");
                }
                List<String> literal = new ArrayList<>();
                for (String a : addresses) {
                    literal.add(parseLiteral(a, "network.hosts." + n).getHostAddress());
                }
                copy.put(n, List.copyOf(literal));
            });
        }
        hosts = Map.copyOf(copy);
        if (maxConnections < 0) {
            throw AirlockException.invalid("network.maxConnections must not be negative, got " + maxConnections);
        }
        if (maxBytes < 0) {
            throw AirlockException.invalid("network.maxBytes must not be negative, got " + maxBytes);
        }
        if (maxConnections == 0 && !(allow.isEmpty() && ranges.isEmpty())) {
            maxConnections = DEFAULT_MAX_CONNECTIONS;
        }
        if (maxBytes == 0 && !(allow.isEmpty() && ranges.isEmpty())) {
            maxBytes = DEFAULT_MAX_BYTES;
        }
    }

    /** A policy with the default limits. */
    public static NetworkPolicy of(List<Destination> allow, List<String> deny, List<AddressRange> ranges, Map<String, List<String>> hosts) {
        return new NetworkPolicy(allow, deny, ranges, hosts, 0, 0);
    }

    /** This policy in a phrase for records and people: {@code none}, or {@code 2 destinations, 1 ranges}. */
    public String summary() {
        return isNone() ? "none" : allow.size() + " destinations, " + ranges.size() + " ranges";
    }

    /** True when nothing can ever be reached: no proxy needs to run. */
    public boolean isNone() {
        return allow.isEmpty() && ranges.isEmpty();
    }

    public NetworkPolicy withLimits(int connections, long bytes) {
        return new NetworkPolicy(allow, deny, ranges, hosts, connections, bytes);
    }

    /** A name (exact or {@code *.wildcard}) and the ports it may be reached on; empty ports: any. */
    public record Destination(String host, List<Integer> ports) {
        public Destination {
            host = normalizeName(host, "network.allow.host", true);
            ports = ports == null ? List.of() : List.copyOf(ports);
            for (int port : ports) {
                if (port < 1 || port > 65535) {
                    throw AirlockException.invalid("network.allow.ports: " + port + " is not a port (1-65535) for " + host);
                }
            }
        }

        public static Destination of(String host, Integer... ports) {
            return new Destination(host, List.of(ports));
        }

        public boolean anyPort() {
            return ports.isEmpty();
        }

        public boolean matchesName(String name) {
            return NetworkPolicy.matches(host, name);
        }

        @Override
        public String toString() {
            return host + (ports.isEmpty() ? ":*" : ":" + String.join(",", ports.stream().map(String::valueOf).toList()));
        }
    }

    /** An address range in CIDR form ({@code 10.0.0.0/8}, {@code ::1/128}; a bare address is one host). */
    public record AddressRange(String cidr) {
        public AddressRange {
            if (cidr == null || cidr.isBlank()) {
                throw AirlockException.invalid("network.ranges: an empty range");
            }
            String[] parts = cidr.trim().split("/", -1);
            if (parts.length > 2) {
                throw AirlockException.invalid("network.ranges: '" + Printable.of(cidr) + "' is not a CIDR range");
            }
            InetAddress base = parseLiteral(parts[0], "network.ranges");
            int max = base instanceof Inet4Address ? 32 : 128;
            int prefix = max;
            if (parts.length == 2) {
                try {
                    prefix = Integer.parseInt(parts[1]);
                } catch (NumberFormatException e) {
                    prefix = -1;
                }
                if (prefix < 0 || prefix > max || !parts[1].matches("[0-9]{1,3}")) {
                    throw AirlockException.invalid("network.ranges: '" + Printable.of(cidr) + "' has a prefix length outside 0-" + max);
                }
            }
            cidr = base.getHostAddress() + "/" + prefix;
        }

        public InetAddress base() {
            return InetAddress.ofLiteral(cidr.substring(0, cidr.indexOf('/')));
        }

        public int prefix() {
            return Integer.parseInt(cidr.substring(cidr.indexOf('/') + 1));
        }

        /** True when {@code address} (of the same family) lies inside this range. */
        public boolean contains(InetAddress address) {
            byte[] a = address.getAddress();
            byte[] b = base().getAddress();
            if (a.length != b.length) {
                return false;
            }
            int bits = prefix();
            for (int i = 0; i < a.length && bits > 0; i++, bits -= 8) {
                int mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
                if ((a[i] & mask) != (b[i] & mask)) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public String toString() {
            return cidr;
        }
    }

    /** {@code pattern} is a name or {@code *.suffix}; the wildcard matches subdomains only. */
    public static boolean matches(String pattern, String name) {
        if (pattern.startsWith("*.")) {
            return name.endsWith(pattern.substring(1)) && name.length() > pattern.length() - 1;
        }
        return pattern.equals(name);
    }

    /** Lower-cases a DNS name, drops one trailing dot, and checks its syntax. */
    public static String normalizeName(String name, String field, boolean wildcardAllowed) {
        if (name == null || name.isBlank()) {
            throw AirlockException.invalid(field + ": an empty host name");
        }
        String n = name.trim().toLowerCase(Locale.ROOT);
        if (n.endsWith(".")) {
            n = n.substring(0, n.length() - 1);
        }
        String rest = n;
        if (n.startsWith("*.")) {
            if (!wildcardAllowed) {
                throw AirlockException.invalid(field + ": '" + Printable.of(name) + "' may not be a wildcard");
            }
            rest = n.substring(2);
        }
        if (rest.isEmpty() || rest.length() > 253) {
            throw AirlockException.invalid(field + ": '" + Printable.of(name) + "' is not a host name");
        }
        for (String label : rest.split("\\.", -1)) {
            if (!LABEL.matcher(label).matches()) {
                throw AirlockException.invalid(field + ": '" + Printable.of(name) + "' is not a host name (label '" + Printable.of(label) + "')");
            }
        }
        return n;
    }

    /** An IP literal in its canonical spelling only (no DNS, no octal or hex forms). */
    private static final java.util.regex.Pattern CANONICAL_IPV4 =
            java.util.regex.Pattern.compile("(0|[1-9][0-9]{0,2})(\\.(0|[1-9][0-9]{0,2})){3}");

    public static InetAddress parseLiteral(String literal, String field) {
        String s = literal == null ? "" : literal.trim();
        if (s.startsWith("[") && s.endsWith("]")) {
            s = s.substring(1, s.length() - 1);
        }
        if (s.indexOf(':') < 0 && !CANONICAL_IPV4.matcher(s).matches()) {
            // 0177.0.0.1 is 127.0.0.1 to inet_aton and 177.0.0.1 to a decimal parser, 10.1 is 10.0.0.1:
            // a policy names addresses one way only, so what it says is what the proxy compares
            throw AirlockException.invalid(field + ": '" + Printable.of(literal) + "' is not an IP address: give IPv4 as a.b.c.d"
                    + " (four decimal numbers 0-255 without leading zeros), or IPv6");
        }
        try {
            return s.indexOf(':') >= 0 ? Inet6Address.ofLiteral(s) : Inet4Address.ofLiteral(s);
        } catch (IllegalArgumentException e) {
            throw AirlockException.invalid(field + ": '" + Printable.of(literal) + "' is not an IP address");
        }
    }
}
