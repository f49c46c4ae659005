package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.AddressRange;
import dev.airlock.core.NetworkPolicy.Destination;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The decision function of the egress proxy: may this sandbox connect to {@code host:port}, and
 * if so to which address exactly. Names resolve here, on the host (the policy's name map first,
 * then the host's resolver); every address they resolve to is checked, so a name that is allowed
 * but resolves to loopback, a private network or a metadata service is refused (DNS rebinding)
 * unless the policy names a range that covers it. An IP literal, in any spelling, is an address
 * that must be covered by a named range. The Airlock server's own listening addresses are never
 * reachable.
 *
 * <p>Immutable and thread-safe.
 */
public final class EgressRules {

    /** Names whose last label is numeric are IPv4 spellings (WHATWG), never DNS names. */
    private static final Pattern NUMERIC_LAST_LABEL = Pattern.compile(".*(^|\\.)(0x[0-9a-f]*|[0-9]+)$");

    private final NetworkPolicy policy;
    private final Set<InetSocketAddress> serverAddresses;
    private final Set<InetAddress> localAddresses;
    private final HostResolver resolver;

    /**
     * @param serverAddresses where the Airlock server listens; a wildcard address stands for every
     *                        address of this host, port 0 for every port
     */
    public EgressRules(NetworkPolicy policy, Set<InetSocketAddress> serverAddresses, HostResolver resolver) {
        this.policy = policy;
        this.serverAddresses = Set.copyOf(serverAddresses);
        this.resolver = resolver;
        this.localAddresses = this.serverAddresses.stream().anyMatch(a -> a.getAddress() == null || a.getAddress().isAnyLocalAddress())
                ? hostAddresses() : Set.of();
    }

    public NetworkPolicy policy() {
        return policy;
    }

    public EgressRules withPolicy(NetworkPolicy newPolicy) {
        return new EgressRules(newPolicy, serverAddresses, resolver);
    }

    /** Checks {@code host} (a name or an IP literal in any spelling) and {@code port}. */
    public EgressDecision decide(String host, int port) {
        if (port < 1 || port > 65535) {
            return new EgressDecision.Denied("port", "port " + port + " is not a valid port");
        }
        Target target = Target.parse(host);
        if (target.error != null) {
            return new EgressDecision.Denied("malformed-destination", target.error);
        }
        if (target.address != null) {
            return checkAddress(target.address, port, null);
        }
        EgressDecision byName = checkName(target.name, port);
        if (!(byName instanceof EgressDecision.Allowed allowedByName)) {
            return byName;
        }
        List<InetAddress> addresses;
        List<String> mapped = policy.hosts().get(target.name);
        try {
            if (mapped != null) {
                addresses = mapped.stream().map(InetAddress::ofLiteral).toList();
            } else {
                addresses = resolver.resolve(target.name);
            }
        } catch (UnknownHostException | RuntimeException e) {
            return new EgressDecision.Denied("resolve", "cannot resolve " + target.name + " on the host: " + e.getMessage());
        }
        if (addresses.isEmpty()) {
            return new EgressDecision.Denied("resolve", target.name + " has no address");
        }
        // Every address must pass, not just one: a name that mixes public and internal answers is
        // refused whole, so the answer order (which an attacker's DNS server controls) cannot matter.
        EgressDecision first = null;
        for (InetAddress address : addresses) {
            EgressDecision d = checkAddress(address, port, allowedByName.rule());
            if (!d.allowed()) {
                return d;
            }
            if (first == null) {
                first = d;
            }
        }
        return first;
    }

    /**
     * Re-checks a connection that is already open (after a policy change) without resolving again:
     * the name must still be allowed and the address it was connected to still acceptable.
     */
    public EgressDecision recheck(String host, int port, InetAddress connected) {
        Target target = Target.parse(host);
        if (target.error != null) {
            return new EgressDecision.Denied("malformed-destination", target.error);
        }
        if (target.name != null) {
            EgressDecision byName = checkName(target.name, port);
            if (!byName.allowed()) {
                return byName;
            }
            return checkAddress(connected, port, byName.rule());
        }
        return checkAddress(connected, port, null);
    }

    private EgressDecision checkName(String name, int port) {
        for (String pattern : policy.deny()) {
            if (NetworkPolicy.matches(pattern, name)) {
                return new EgressDecision.Denied("deny " + pattern, name + " is on the policy's deny list (" + pattern + ")");
            }
        }
        Destination nameMatch = null;
        for (Destination d : policy.allow()) {
            if (d.matchesName(name)) {
                if (d.anyPort() || d.ports().contains(port)) {
                    return new EgressDecision.Allowed(null, "allow " + d);
                }
                nameMatch = d;
            }
        }
        if (nameMatch != null) {
            return new EgressDecision.Denied("port", "port " + port + " of " + name + " is not allowed (allow " + nameMatch + ")");
        }
        return new EgressDecision.Denied("default", name + " is not on the policy's allow list");
    }

    private EgressDecision checkAddress(InetAddress address, int port, String nameRule) {
        String shown = address.getHostAddress();
        Inet4Address embedded = AddressKind.embeddedIpv4(address);
        if (isServer(address, port) || (embedded != null && isServer(embedded, port))) {
            return new EgressDecision.Denied("airlock-server", shown + ":" + port + " is the Airlock server itself, never reachable from a sandbox");
        }
        InetAddress effective = embedded != null ? embedded : address;
        AddressKind kind = AddressKind.of(effective);
        if (kind == AddressKind.UNSPECIFIED) {
            return new EgressDecision.Denied("address unspecified", shown + " is the unspecified address, which means this host");
        }
        AddressRange range = coveringRange(address, effective, kind);
        if (nameRule == null) {
            if (range == null) {
                return new EgressDecision.Denied("ip-literal", "IP address " + shown + " is not in any range the policy names"
                        + (kind == AddressKind.METADATA ? " (a metadata address must be named exactly, as a /32 or /128)" : ""));
            }
            return new EgressDecision.Allowed(address, "range " + range);
        }
        if (kind != AddressKind.PUBLIC && range == null) {
            return new EgressDecision.Denied("address " + kind.name().toLowerCase(Locale.ROOT).replace('_', '-'),
                    "the name resolves to " + shown + ", a " + kind.name().toLowerCase(Locale.ROOT).replace('_', ' ')
                            + " address; name a range that covers it to allow that");
        }
        return new EgressDecision.Allowed(address, range == null ? nameRule : nameRule + " + range " + range);
    }

    /** A metadata address is covered only by a range naming exactly that address. */
    private AddressRange coveringRange(InetAddress address, InetAddress effective, AddressKind kind) {
        for (AddressRange r : policy.ranges()) {
            boolean covers = r.contains(address) || r.contains(effective);
            if (covers && (kind != AddressKind.METADATA || r.prefix() == (r.base() instanceof Inet4Address ? 32 : 128))) {
                return r;
            }
        }
        return null;
    }

    private boolean isServer(InetAddress address, int port) {
        for (InetSocketAddress s : serverAddresses) {
            if (s.getPort() != 0 && s.getPort() != port) {
                continue;
            }
            InetAddress sa = s.getAddress();
            if (sa == null || sa.isAnyLocalAddress()) {
                if (address.isLoopbackAddress() || address.isAnyLocalAddress() || localAddresses.contains(address)) {
                    return true;
                }
            } else if (sa.equals(address)) {
                return true;
            }
        }
        return false;
    }

    private static Set<InetAddress> hostAddresses() {
        Set<InetAddress> all = new HashSet<>();
        try {
            for (NetworkInterface ni : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                all.addAll(Collections.list(ni.getInetAddresses()).stream().map(EgressRules::withoutScope).toList());
            }
        } catch (SocketException e) {
            // Fall back to loopback and the wildcard, both checked separately.
        }
        return all;
    }

    private static InetAddress withoutScope(InetAddress a) {
        try {
            return a instanceof Inet6Address ? InetAddress.getByAddress(a.getAddress()) : a;
        } catch (UnknownHostException e) {
            return a;
        }
    }

    /** A destination as the sandbox spelled it, normalized: a DNS name or an address, or why neither. */
    record Target(String name, InetAddress address, String error) {

        static Target parse(String host) {
            if (host == null || host.isEmpty() || host.length() > 255) {
                return new Target(null, null, "an empty or over-long host");
            }
            String h = host.toLowerCase(Locale.ROOT);
            if (h.startsWith("[") && h.endsWith("]")) {
                h = h.substring(1, h.length() - 1);
            }
            if (h.indexOf(':') >= 0) {
                if (h.indexOf('%') >= 0) {
                    return new Target(null, null, "'" + host + "': scoped IPv6 addresses are not allowed");
                }
                try {
                    return new Target(null, Inet6Address.ofLiteral(h), null);
                } catch (IllegalArgumentException e) {
                    return new Target(null, null, "'" + host + "' is not an IPv6 address");
                }
            }
            if (h.endsWith(".")) {
                h = h.substring(0, h.length() - 1);
            }
            if (NUMERIC_LAST_LABEL.matcher(h).matches()) {
                // 2130706433, 0x7f.1, 017700000001, 127.1: what inet_aton would make of it.
                try {
                    return new Target(null, Inet4Address.ofPosixLiteral(h), null);
                } catch (IllegalArgumentException e) {
                    return new Target(null, null, "'" + host + "' looks like an IPv4 address but is not a valid one");
                }
            }
            try {
                return new Target(NetworkPolicy.normalizeName(h, "host", false), null, null);
            } catch (RuntimeException e) {
                return new Target(null, null, "'" + host + "' is not a valid host name");
            }
        }
    }

    /** For tests and records: the normalized spelling of a destination. */
    static String normalize(String host) {
        Target t = Target.parse(host);
        return t.name != null ? t.name : t.address != null ? t.address.getHostAddress() : host;
    }

    static List<String> describe(List<InetAddress> addresses) {
        List<String> out = new ArrayList<>();
        addresses.forEach(a -> out.add(a.getHostAddress()));
        return out;
    }
}
