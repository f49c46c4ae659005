package dev.airlock.egress;

/** The three ways a sandbox asks the proxy for a destination, each with its own way to answer. */
enum EgressProtocol {

    SOCKS5("socks5"),
    HTTP_CONNECT("http-connect"),
    HTTP_FORWARD("http-forward");

    /** As {@link EgressRecord#protocol()} names it. */
    final String recordName;

    EgressProtocol(String recordName) {
        this.recordName = recordName;
    }

    /** The answer that tells the client its tunnel is open; a forward request has none. */
    byte[] established() {
        return switch (this) {
            case SOCKS5 -> Socks5Handshake.reply(Socks5Handshake.SUCCEEDED);
            case HTTP_CONNECT -> HttpAnswers.CONNECTION_ESTABLISHED;
            case HTTP_FORWARD -> throw new IllegalStateException("a forward request is no tunnel");
        };
    }

    /** The answer to a refused request, in this protocol's own terms. */
    byte[] refusal(EgressRefusal r) {
        return this == SOCKS5 ? Socks5Handshake.reply(r.socksReply) : HttpAnswers.error(r);
    }
}
