package dev.airlock.egress;

import dev.airlock.core.Printable;

import javax.net.ssl.SSLSocket;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.util.List;

/**
 * The one request of an admitted connection to an inspected destination (one a credential is bound
 * to, or a request approval inspects), read here before anything goes upstream. In a tunnel the
 * sandbox's TLS ends here (told by its first byte, a handshake record) with a leaf of the sandbox's
 * own CA; what runs inside, TLS or not, must be one origin-form request. Then, in order: the
 * {@link CredentialInjector}, the {@link ApprovalHold}, the {@link UpstreamDial}, TLS to the real
 * host verified before a byte is sent, and the {@link Exchange} with the credentials set.
 */
final class InspectedExchange {

    private static final int TLS_HANDSHAKE_RECORD = 0x16;

    private final Interception interception;
    private final CredentialInjector credentials;
    private final ApprovalHold approvals;
    private final UpstreamDial dial;
    private final Exchange exchange;
    private final int maxHeaderBytes;

    InspectedExchange(Interception interception, ApprovalHold approvals, UpstreamDial dial, Exchange exchange, int maxHeaderBytes) {
        this.interception = interception;
        this.credentials = new CredentialInjector(interception);
        this.approvals = approvals;
        this.dial = dial;
        this.exchange = exchange;
        this.maxHeaderBytes = maxHeaderBytes;
    }

    /** Whether requests to this destination are read here rather than relayed unread. */
    boolean inspects(EgressRequest asked) {
        return interception.inspects(asked.destination(), asked.port());
    }

    void serve(EgressConnection c, EgressRequest asked, Admission.Admitted admitted) throws IOException {
        ClientChannel client = c.client;
        if (!asked.isTunnel()) {
            send(c, asked, admitted, asked.forward(), asked.forward().originPath(), asked.authority(), false, client.input(), client.output());
            return;
        }
        client.write(asked.protocol().established());
        if (!client.awaitByte()) {
            return;
        }
        if (client.peek() != TLS_HANDSHAKE_RECORD) {
            tunnelRequest(c, asked, admitted, client.input(), client.output(), false);
            return;
        }
        TlsChannel tls = new TlsChannel(client.channel(), interception.sandboxEngine(asked.destination(), asked.port()), client.buffered());
        try {
            try {
                tls.handshake();
            } catch (IOException e) {
                c.cut("intercepted: TLS handshake with the sandbox failed: " + Printable.of(String.valueOf(e.getMessage())));
                return;
            }
            tunnelRequest(c, asked, admitted, tls.input(), tls.output(), true);
        } finally {
            tls.close();
        }
    }

    /** Reads the one request of an inspected tunnel: origin-form, and a Host header, if any, naming the tunnel's host. */
    private void tunnelRequest(EgressConnection c, EgressRequest asked, Admission.Admitted admitted, InputStream fromClient,
                               OutputStream toClient, boolean tls) throws IOException {
        HttpHead.Authority authority = new HttpHead.Authority(asked.destination(), asked.port());
        HttpHead head;
        String path;
        try {
            head = HttpHead.read(() -> {
                int b = fromClient.read();
                if (b < 0) {
                    throw new EOFException("end of stream before a request");
                }
                return b;
            }, maxHeaderBytes);
            path = head.tunnelTarget();
            head.checkHostHeader(authority);
        } catch (HttpHead.Malformed e) {
            badRequest(c, e, toClient);
            return;
        }
        send(c, asked, admitted, head, path, authority, tls, fromClient, toClient);
    }

    private void send(EgressConnection c, EgressRequest asked, Admission.Admitted admitted, HttpHead head, String path,
                      HttpHead.Authority authority, boolean tls, InputStream fromClient, OutputStream toClient) throws IOException {
        long length;
        List<String> methods;
        try {
            length = head.bodyLength();
            methods = head.methods();
        } catch (HttpHead.Malformed e) {
            badRequest(c, e, toClient);
            return;
        }
        CredentialInjector.Bound bound;
        try {
            bound = credentials.bind(head, asked.destination(), asked.port());
        } catch (EgressRefusal r) {
            c.refusedInside(r.rule);
            toClient.write(HttpAnswers.error(r));
            return;
        }
        if (!approvals.pass(c, methods, path, length, fromClient, toClient)) {
            return;
        }
        Socket upstream;
        try {
            upstream = dial.dial(c, asked, admitted);
        } catch (EgressRefusal r) {
            c.record.refused(r);
            toClient.write(HttpAnswers.error(r));
            return;
        }
        InputStream fromUpstream = upstream.getInputStream();
        OutputStream toUpstream = upstream.getOutputStream();
        if (tls) {
            SSLSocket verified;
            try {
                // Verified before anything is sent: a secret never goes to an unverified peer.
                verified = interception.connectUpstream(upstream, asked.destination(), asked.port());
            } catch (IOException e) {
                String why = "TLS to " + asked.destination() + ":" + asked.port() + " failed verification: "
                        + Printable.of(String.valueOf(e.getMessage()));
                c.refusedInside("intercepted: upstream " + why);
                toClient.write(HttpAnswers.error(502, "intercepted", "upstream " + why));
                return;
            }
            fromUpstream = verified.getInputStream();
            toUpstream = verified.getOutputStream();
        }
        exchange.run(c, bound.request(head, path, authority, tls), length, bound.names(), fromClient, toClient, fromUpstream, toUpstream);
    }

    private static void badRequest(EgressConnection c, HttpHead.Malformed e, OutputStream toClient) throws IOException {
        c.refusedInside("intercepted: bad request: " + Printable.of(e.getMessage()));
        toClient.write(HttpAnswers.error(400, "http: bad request", e.getMessage()));
    }
}
