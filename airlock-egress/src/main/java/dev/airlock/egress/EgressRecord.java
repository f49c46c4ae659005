package dev.airlock.egress;

import java.time.Duration;
import java.time.Instant;

/**
 * One connection attempt through a sandbox's egress proxy, as the audit log keeps it.
 *
 * @param destination the host as the sandbox named it, normalized (a DNS name or an address)
 * @param address     the address connected to (or that would have been), null when none was chosen
 * @param protocol    {@code http-connect}, {@code http-forward} or {@code socks5}
 * @param rule        the policy rule that decided; for a connection cut later, the rule that cut it
 */
public record EgressRecord(String sandboxId, Instant start, String protocol, String destination, int port, String address,
                           boolean allowed, String rule, long bytesUp, long bytesDown, Duration duration) {
}
