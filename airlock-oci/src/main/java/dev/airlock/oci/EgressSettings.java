package dev.airlock.oci;

import dev.airlock.egress.EgressListener;
import dev.airlock.egress.EgressProxy;
import dev.airlock.egress.HostResolver;
import dev.airlock.egress.RequestGate;

import java.net.InetSocketAddress;
import java.util.Set;
import java.util.function.Supplier;

/**
 * How the driver runs each sandbox's egress proxy (only for sandboxes whose network policy is not
 * {@code NONE}).
 *
 * @param serverAddresses where the Airlock server listens: never reachable from a sandbox, whatever
 *                        its policy (a wildcard address means every address of this host, port 0
 *                        every port); asked each time a sandbox is created, since a server may
 *                        learn its port only after the driver exists
 * @param resolver        resolves names on the host for the proxy
 * @param listener        receives a record of every connection attempt
 * @param requestGate     decides each request a sandbox's {@code SandboxSpec.requestApprovals()}
 *                        cover; {@link RequestGate#DENY_ALL} unless set
 */
public record EgressSettings(Supplier<Set<InetSocketAddress>> serverAddresses, HostResolver resolver, EgressListener listener,
                             EgressProxy.Options options, RequestGate requestGate) {

    /** The port the agent listens on inside every sandbox with network (its own loopback). */
    public static final int SANDBOX_PORT = 3128;

    public static final EgressSettings DEFAULTS = new EgressSettings(Set::of, HostResolver.SYSTEM, EgressListener.NONE,
            EgressProxy.Options.DEFAULTS, RequestGate.DENY_ALL);

    public EgressSettings {
        serverAddresses = serverAddresses == null ? Set::of : serverAddresses;
        resolver = resolver == null ? HostResolver.SYSTEM : resolver;
        listener = listener == null ? EgressListener.NONE : listener;
        options = options == null ? EgressProxy.Options.DEFAULTS : options;
        requestGate = requestGate == null ? RequestGate.DENY_ALL : requestGate;
    }

    /** Settings whose request gate refuses every covered request. */
    public EgressSettings(Supplier<Set<InetSocketAddress>> serverAddresses, HostResolver resolver, EgressListener listener,
                          EgressProxy.Options options) {
        this(serverAddresses, resolver, listener, options, RequestGate.DENY_ALL);
    }

    public EgressSettings withListener(EgressListener l) {
        return new EgressSettings(serverAddresses, resolver, l, options, requestGate);
    }

    /**
     * Timeouts, bounds, and the trust that verifies intercepted HTTPS hosts ({@link
     * EgressProxy.Options#withUpstreamTls}, {@link EgressProxy.Options#withApprovalTimeout}).
     */
    public EgressSettings withOptions(EgressProxy.Options o) {
        return new EgressSettings(serverAddresses, resolver, listener, o, requestGate);
    }

    public EgressSettings withServerAddresses(Set<InetSocketAddress> addresses) {
        Set<InetSocketAddress> copy = Set.copyOf(addresses);
        return withServerAddresses(() -> copy);
    }

    public EgressSettings withServerAddresses(Supplier<Set<InetSocketAddress>> addresses) {
        return new EgressSettings(addresses, resolver, listener, options, requestGate);
    }

    /**
     * The gate every sandbox's proxy asks, on the requesting connection's thread, before it sends a
     * request that one of the sandbox's request approvals covers (see {@link RequestGate}).
     */
    public EgressSettings withRequestGate(RequestGate gate) {
        return new EgressSettings(serverAddresses, resolver, listener, options, gate);
    }
}
