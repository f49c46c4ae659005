package dev.airlock.egress;

/**
 * What the client asked for, as its handshake read it, and nothing yet decided about it.
 *
 * @param requestedHost the host as the sandbox spelled it (what the rules decide on)
 * @param destination   the same, normalized (what records, credentials and approvals match)
 * @param forward       the request of a plain-HTTP forward, whose body is still unread; null for a tunnel
 */
record EgressRequest(EgressProtocol protocol, String requestedHost, String destination, int port, HttpHead forward)
        implements HandshakeOutcome {

    static EgressRequest tunnel(EgressProtocol protocol, String host, int port) {
        return new EgressRequest(protocol, host, EgressRules.normalize(host), port, null);
    }

    static EgressRequest forward(HttpHead head, HttpHead.Authority target) {
        return new EgressRequest(EgressProtocol.HTTP_FORWARD, target.host(), EgressRules.normalize(target.host()), target.port(), head);
    }

    boolean isTunnel() {
        return forward == null;
    }

    /** The authority a forwarded request names, as the sandbox spelled it. */
    HttpHead.Authority authority() {
        return new HttpHead.Authority(requestedHost, port);
    }
}
