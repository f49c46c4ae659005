package dev.airlock.egress;

import java.io.IOException;
import java.net.Socket;
import java.util.List;
import java.util.function.Supplier;

/**
 * The stages of one connection, assembled in one place and run in this order. Each does one job,
 * then hands on, or answers the client in its protocol's terms and ends the connection:
 *
 * <ol>
 *   <li>handshake: {@link Socks5Handshake} (first byte 0x05) or {@link HttpHandshake} (CONNECT or an
 *       absolute-form forward request) parses what the client asked for into an {@link EgressRequest};
 *   <li>{@link Admission}: the policy's rules on the name and port, then the byte and connection budgets;
 *   <li>to an inspected destination, the {@link InspectedExchange} (TLS termination, {@link
 *       CredentialInjector}, {@link ApprovalHold}, then the dial and one {@link Exchange});
 *   <li>otherwise the {@link UpstreamDial} (with its re-check of the newest rules), then a {@link
 *       Relay} for a tunnel, or one {@link Exchange} for a plain forward request.
 * </ol>
 */
final class EgressPipeline {

    private final int maxHeaderBytes;
    private final Admission admission;
    private final UpstreamDial dial;
    private final Relay relay;
    private final Exchange exchange;
    /** Null when nothing is inspected (no credential, no request approval). */
    private final InspectedExchange inspected;

    EgressPipeline(String sandboxId, EgressProxy.Options options, Supplier<EgressRules> rules, SandboxBudget budget,
                   Interception interception, RequestGate gate) {
        this.maxHeaderBytes = options.maxHeaderBytes();
        this.admission = new Admission(rules, budget);
        this.dial = new UpstreamDial(rules, options.connectTimeout());
        this.relay = new Relay(sandboxId);
        this.exchange = new Exchange(sandboxId, options.maxHeaderBytes());
        this.inspected = interception == null ? null
                : new InspectedExchange(interception, new ApprovalHold(sandboxId, interception, gate), dial, exchange, options.maxHeaderBytes());
    }

    void run(EgressConnection c) throws IOException {
        HandshakeOutcome outcome = handshake(c);
        if (outcome == null) {
            return;
        }
        if (outcome instanceof HandshakeOutcome.Rejected rejected) {
            c.record.rejected(rejected);
            if (rejected.answer() != null) {
                c.client.write(rejected.answer());
            }
            return;
        }
        EgressRequest asked = (EgressRequest) outcome;
        c.record.asked(asked);
        Admission.Admitted admitted;
        try {
            admitted = admission.admit(asked);
        } catch (EgressRefusal r) {
            refuse(c, asked, r);
            return;
        }
        try {
            c.record.admitted(admitted);
            if (inspected != null && inspected.inspects(asked)) {
                inspected.serve(c, asked, admitted);
            } else if (asked.isTunnel()) {
                Socket upstream = dial.dial(c, asked, admitted);
                c.client.write(asked.protocol().established());
                relay.run(c, upstream);
            } else {
                forward(c, asked, admitted);
            }
        } catch (EgressRefusal r) {
            refuse(c, asked, r);
        } finally {
            // The slot is free once nothing of the connection is open any more.
            c.close();
            admission.release();
        }
    }

    /** Null when the client closed before its first byte. */
    private HandshakeOutcome handshake(EgressConnection c) throws IOException {
        if (!c.client.awaitByte()) {
            return null;
        }
        if (c.client.peek() == Socks5Handshake.VERSION) {
            c.record.protocol(EgressProtocol.SOCKS5.recordName);
            return Socks5Handshake.read(c.client);
        }
        return HttpHandshake.read(c.client, maxHeaderBytes);
    }

    /**
     * The one request of a plain-HTTP forward: its body framing checked, then sent upstream with
     * exactly that body. Nothing after it is read, so a pipelined request (another Host, another
     * target) is never relayed unchecked; a client asks again on a new connection, admitted like the first.
     */
    private void forward(EgressConnection c, EgressRequest asked, Admission.Admitted admitted) throws IOException, EgressRefusal {
        long length;
        try {
            length = asked.forward().bodyLength();
        } catch (HttpHead.Malformed e) {
            c.record.rule("http: " + e.getMessage());
            c.client.write(HttpAnswers.error(400, "http: bad request", e.getMessage()));
            return;
        }
        Socket upstream = dial.dial(c, asked, admitted);
        exchange.run(c, asked.forward().originForm(asked.authority()), length, List.of(), c.client.input(), c.client.output(),
                upstream.getInputStream(), upstream.getOutputStream());
    }

    private static void refuse(EgressConnection c, EgressRequest asked, EgressRefusal r) throws IOException {
        c.record.refused(r);
        c.client.write(asked.protocol().refusal(r));
    }
}
