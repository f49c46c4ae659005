package dev.airlock.egress;

/** What a handshake made of the client's first bytes: a request to decide on, or a refusal already worded. */
sealed interface HandshakeOutcome permits EgressRequest, HandshakeOutcome.Rejected {

    /**
     * The handshake itself refused: malformed, or asking for what the proxy does not do.
     *
     * @param protocol    as the record names it ({@code http} when not even the request line was read)
     * @param destination normalized, when the handshake got that far; else null
     * @param answer      what the client is told; null to close without a word (a SOCKS version mismatch)
     */
    record Rejected(String protocol, String destination, int port, String rule, byte[] answer) implements HandshakeOutcome {
    }
}
