package dev.airlock.egress;

import java.net.InetSocketAddress;
import java.util.Set;
import java.util.function.Supplier;

/**
 * How the {@link EgressBroker} runs each sandbox's egress proxy (only for sandboxes whose network
 * policy is not {@code NONE}).
 *
 * @param serverAddresses where the Airlock server listens: never reachable from a sandbox, whatever
 *                        its policy (a wildcard address means every address of this host, port 0
 *                        every port); asked each time a sandbox is created, since a server may
 *                        learn its port only after the broker exists
 * @param resolver        resolves names on the host for the proxy
 * @param listener        receives a record of every connection attempt
 * @param options         timeouts, bounds, and the trust for intercepted HTTPS hosts
 */
public record EgressSettings(Supplier<Set<InetSocketAddress>> serverAddresses, HostResolver resolver, EgressListener listener,
                             EgressProxy.Options options) {

    public static final EgressSettings DEFAULTS = new EgressSettings(Set::of, HostResolver.SYSTEM, EgressListener.NONE,
            EgressProxy.Options.DEFAULTS);

    public EgressSettings {
        serverAddresses = serverAddresses == null ? Set::of : serverAddresses;
        resolver = resolver == null ? HostResolver.SYSTEM : resolver;
        listener = listener == null ? EgressListener.NONE : listener;
        options = options == null ? EgressProxy.Options.DEFAULTS : options;
    }

    public EgressSettings withListener(EgressListener l) {
        return new EgressSettings(serverAddresses, resolver, l, options);
    }

    /**
     * Timeouts, bounds, and the trust that verifies intercepted HTTPS hosts ({@link
     * EgressProxy.Options#withUpstreamTls}, {@link EgressProxy.Options#withApprovalTimeout}).
     */
    public EgressSettings withOptions(EgressProxy.Options o) {
        return new EgressSettings(serverAddresses, resolver, listener, o);
    }

    public EgressSettings withServerAddresses(Set<InetSocketAddress> addresses) {
        Set<InetSocketAddress> copy = Set.copyOf(addresses);
        return withServerAddresses(() -> copy);
    }

    public EgressSettings withServerAddresses(Supplier<Set<InetSocketAddress>> addresses) {
        return new EgressSettings(addresses, resolver, listener, options);
    }
}
