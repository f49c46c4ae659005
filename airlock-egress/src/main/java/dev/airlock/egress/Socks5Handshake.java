package dev.airlock.egress;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;

/**
 * SOCKS5 (RFC 1928), as far as the proxy speaks it: no authentication, CONNECT only, to an IPv4
 * address, a name or an IPv6 address. Only parses into an {@link EgressRequest}; the method
 * selection is the one answer it gives itself, since the client waits for it before asking.
 */
final class Socks5Handshake {

    static final int VERSION = 5;
    static final int SUCCEEDED = 0;
    static final int NOT_ALLOWED = 2;
    static final int HOST_UNREACHABLE = 4;
    static final int CONNECTION_REFUSED = 5;
    static final int TTL_EXPIRED = 6;
    static final int COMMAND_NOT_SUPPORTED = 7;
    static final int ADDRESS_TYPE_NOT_SUPPORTED = 8;

    private static final int NO_AUTHENTICATION = 0;
    private static final int NO_ACCEPTABLE_METHOD = 0xff;
    private static final int CONNECT = 1;
    private static final String PROTOCOL = EgressProtocol.SOCKS5.recordName;

    private Socks5Handshake() {
    }

    /**
     * Reads the greeting and the request. The end of the stream before the request is whole is an
     * {@link IOException}; the buffer of the client channel bounds what is read.
     */
    static HandshakeOutcome read(ClientChannel client) throws IOException {
        client.readByte();      // the version, by which the protocol was told
        int methods = client.readByte();
        boolean noAuth = false;
        for (byte m : client.readBytes(methods)) {
            noAuth |= m == NO_AUTHENTICATION;
        }
        if (!noAuth) {
            return new HandshakeOutcome.Rejected(PROTOCOL, null, 0, "socks: no acceptable authentication method",
                    new byte[] {VERSION, (byte) NO_ACCEPTABLE_METHOD});
        }
        client.write(new byte[] {VERSION, NO_AUTHENTICATION});
        if (client.readByte() != VERSION) {
            return new HandshakeOutcome.Rejected(PROTOCOL, null, 0, "socks: bad version", null);
        }
        int command = client.readByte();
        client.readByte();      // reserved
        int type = client.readByte();
        String host;
        switch (type) {
            case 1 -> host = InetAddress.getByAddress(client.readBytes(4)).getHostAddress();
            case 3 -> host = new String(client.readBytes(client.readByte()), StandardCharsets.ISO_8859_1);
            case 4 -> host = "[" + InetAddress.getByAddress(client.readBytes(16)).getHostAddress() + "]";
            default -> {
                return new HandshakeOutcome.Rejected(PROTOCOL, null, 0, "socks: address type " + type + " not supported",
                        reply(ADDRESS_TYPE_NOT_SUPPORTED));
            }
        }
        byte[] p = client.readBytes(2);
        int port = (p[0] & 0xff) << 8 | (p[1] & 0xff);
        if (command != CONNECT) {
            return new HandshakeOutcome.Rejected(PROTOCOL, EgressRules.normalize(host), port, "socks: only CONNECT is supported",
                    reply(COMMAND_NOT_SUPPORTED));
        }
        return EgressRequest.tunnel(EgressProtocol.SOCKS5, host, port);
    }

    /** A reply to the request; the bound address is never disclosed (0.0.0.0:0). */
    static byte[] reply(int code) {
        return new byte[] {VERSION, (byte) code, 0, 1, 0, 0, 0, 0, 0, 0};
    }
}
