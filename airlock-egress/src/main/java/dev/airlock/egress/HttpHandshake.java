package dev.airlock.egress;

import java.io.IOException;

/**
 * The two HTTP ways to ask for a destination, told apart by the method: {@code CONNECT host:port}
 * (a tunnel) and an absolute-form {@code GET http://host/path} (a forward request, the only one of
 * its connection). Only parses into an {@link EgressRequest}; a forward request's body stays unread.
 */
final class HttpHandshake {

    private HttpHandshake() {
    }

    /** Reads the request head within {@code maxHeaderBytes} and parses it. */
    static HandshakeOutcome read(ClientChannel client, int maxHeaderBytes) throws IOException {
        HttpHead head;
        try {
            head = HttpHead.read(client::readByte, maxHeaderBytes);
        } catch (HttpHead.Malformed e) {
            String rule = "http: malformed request";
            return new HandshakeOutcome.Rejected("http", null, 0, rule, HttpAnswers.error(400, rule, e.getMessage()));
        }
        return head.method().equals("CONNECT") ? connect(head) : forward(head);
    }

    /** {@code CONNECT host:port}: a port is required, and a Host header, if any, must name the same. */
    static HandshakeOutcome connect(HttpHead head) {
        HttpHead.Authority target = null;
        try {
            target = head.connectTarget();
            head.checkHostHeader(target);
            return EgressRequest.tunnel(EgressProtocol.HTTP_CONNECT, target.host(), target.port());
        } catch (HttpHead.Malformed e) {
            return badRequest(EgressProtocol.HTTP_CONNECT, target, e);
        }
    }

    /** An absolute {@code http://} target (https needs CONNECT), and a Host header, if any, naming the same. */
    static HandshakeOutcome forward(HttpHead head) {
        HttpHead.Authority target = null;
        try {
            target = head.absoluteTarget();
            head.checkHostHeader(target);
            return EgressRequest.forward(head, target);
        } catch (HttpHead.Malformed e) {
            return badRequest(EgressProtocol.HTTP_FORWARD, target, e);
        }
    }

    private static HandshakeOutcome badRequest(EgressProtocol protocol, HttpHead.Authority target, HttpHead.Malformed e) {
        return new HandshakeOutcome.Rejected(protocol.recordName, target == null ? null : EgressRules.normalize(target.host()),
                target == null ? 0 : target.port(), "http: " + e.getMessage(), HttpAnswers.error(400, "http: bad request", e.getMessage()));
    }
}
