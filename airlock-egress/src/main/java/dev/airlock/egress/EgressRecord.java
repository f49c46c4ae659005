package dev.airlock.egress;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * One connection attempt through a sandbox's egress proxy, as the audit log keeps it.
 *
 * @param destination the host as the sandbox named it, normalized (a DNS name or an address)
 * @param address     the address connected to (or that would have been), null when none was chosen
 * @param protocol    {@code http-connect}, {@code http-forward} or {@code socks5}
 * @param rule        the policy rule that decided; for a connection cut later, the rule that cut it
 * @param credentials the names of the credentials the proxy injected into requests on this
 *                    connection (never their values); empty when none
 */
public record EgressRecord(String sandboxId, Instant start, String protocol, String destination, int port, String address,
                           boolean allowed, String rule, long bytesUp, long bytesDown, Duration duration, List<String> credentials) {

    public EgressRecord {
        credentials = credentials == null ? List.of() : List.copyOf(credentials);
    }

    /** A record of a connection that carried no credential. */
    public EgressRecord(String sandboxId, Instant start, String protocol, String destination, int port, String address,
                        boolean allowed, String rule, long bytesUp, long bytesDown, Duration duration) {
        this(sandboxId, start, protocol, destination, port, address, allowed, rule, bytesUp, bytesDown, duration, List.of());
    }
}
