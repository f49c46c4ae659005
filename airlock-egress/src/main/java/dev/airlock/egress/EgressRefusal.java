package dev.airlock.egress;

import java.net.InetAddress;

/**
 * A stage's refusal of an admitted or half-admitted request, with the answer for either dialect:
 * an HTTP status for CONNECT and forward requests, a SOCKS5 reply code for SOCKS5. Always names
 * the rule that refused.
 */
final class EgressRefusal extends Exception {

    final int httpStatus;
    final int socksReply;
    final String rule;
    /** The address that would have been connected to, for the record; null when none was chosen. */
    final InetAddress address;

    EgressRefusal(int httpStatus, int socksReply, String rule, String message, InetAddress address) {
        super(message, null, false, false);
        this.httpStatus = httpStatus;
        this.socksReply = socksReply;
        this.rule = rule;
        this.address = address;
    }
}
