package dev.airlock.egress;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * Connects to exactly the address admission chose (the name is never resolved again), then asks
 * the newest rules again: the policy may have changed while connecting or while a person decided
 * on the request, and the newest one decides.
 */
final class UpstreamDial {

    private final Supplier<EgressRules> rules;
    private final Duration connectTimeout;

    UpstreamDial(Supplier<EgressRules> rules, Duration connectTimeout) {
        this.rules = rules;
        this.connectTimeout = connectTimeout;
    }

    /** The connected socket, which {@code c} will close; or why not, with nothing left open. */
    Socket dial(EgressConnection c, EgressRequest asked, Admission.Admitted admitted) throws EgressRefusal {
        InetAddress address = admitted.address();
        int port = asked.port();
        String where = address.getHostAddress() + ":" + port;
        Socket s = new Socket();
        try {
            s.setTcpNoDelay(true);
            c.upstream(s);
            s.connect(new InetSocketAddress(address, port), (int) connectTimeout.toMillis());
        } catch (SocketTimeoutException e) {
            EgressConnection.closeQuietly(s);
            throw new EgressRefusal(504, Socks5Handshake.TTL_EXPIRED, admitted.rule(), "connecting to " + where + " timed out", null);
        } catch (ConnectException e) {
            EgressConnection.closeQuietly(s);
            throw new EgressRefusal(502, Socks5Handshake.CONNECTION_REFUSED, admitted.rule(), "connection to " + where + " refused", null);
        } catch (IOException e) {
            EgressConnection.closeQuietly(s);
            throw new EgressRefusal(502, Socks5Handshake.HOST_UNREACHABLE, admitted.rule(), "cannot connect to " + where + ": " + e.getMessage(),
                    null);
        }
        EgressRules now = rules.get();
        if (now != admitted.admittedBy()) {
            EgressDecision again = now.recheck(asked.requestedHost(), port, address);
            if (again instanceof EgressDecision.Denied denied) {
                EgressConnection.closeQuietly(s);
                throw new EgressRefusal(403, Socks5Handshake.NOT_ALLOWED, denied.rule(), denied.reason(), null);
            }
        }
        return s;
    }
}
