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
 * @param allowed     whether the policy let the connection through and it was made; false also for a
 *                    request the approval gate refused (then nothing, not even a connection, went upstream)
 * @param rule        the policy rule that decided; for a connection cut later, the rule that cut it;
 *                    {@code request approval: <METHOD> denied} for a refused approval
 * @param credentials the names of the credentials the proxy injected into requests on this
 *                    connection (never their values); empty when none
 * @param approval    null when no request on this connection needed approval; else {@link
 *                    #APPROVED} or {@link #DENIED}
 */
public record EgressRecord(String sandboxId, Instant start, String protocol, String destination, int port, String address,
                           boolean allowed, String rule, long bytesUp, long bytesDown, Duration duration, List<String> credentials,
                           String approval) {

    public static final String APPROVED = "approved";
    public static final String DENIED = "denied";

    public EgressRecord {
        credentials = credentials == null ? List.of() : List.copyOf(credentials);
    }

    /** A record of a connection none of whose requests needed approval. */
    public EgressRecord(String sandboxId, Instant start, String protocol, String destination, int port, String address,
                        boolean allowed, String rule, long bytesUp, long bytesDown, Duration duration, List<String> credentials) {
        this(sandboxId, start, protocol, destination, port, address, allowed, rule, bytesUp, bytesDown, duration, credentials, null);
    }

    /** A record of a connection that carried no credential and needed no approval. */
    public EgressRecord(String sandboxId, Instant start, String protocol, String destination, int port, String address,
                        boolean allowed, String rule, long bytesUp, long bytesDown, Duration duration) {
        this(sandboxId, start, protocol, destination, port, address, allowed, rule, bytesUp, bytesDown, duration, List.of(), null);
    }
}
