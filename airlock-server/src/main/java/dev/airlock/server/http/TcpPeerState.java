package dev.airlock.server.http;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Whether the peer of a TCP connection has closed its side, told by the kernel's connection table
 * ({@code /proc/net/tcp} and {@code tcp6}) rather than by reading the socket, so that no byte a
 * client sent is taken from the HTTP server. Connections are matched by their two ports; a
 * connection is closed only when every match has left the established state (a FIN or a reset
 * came), so a doubtful answer is "still open".
 */
final class TcpPeerState {

    private static final List<Path> TABLES = List.of(Path.of("/proc/net/tcp"), Path.of("/proc/net/tcp6"));
    /** The kernel's TCP_ESTABLISHED, as {@code /proc/net/tcp} writes it. */
    private static final String ESTABLISHED = "01";

    private TcpPeerState() {
    }

    /** True when the connection from {@code remote} to {@code local} is no longer established. */
    static boolean peerClosed(InetSocketAddress local, InetSocketAddress remote) {
        String localPort = ":" + hexPort(local.getPort());
        String remotePort = ":" + hexPort(remote.getPort());
        boolean found = false;
        for (Path table : TABLES) {
            List<String> lines;
            try {
                lines = Files.readAllLines(table);
            } catch (IOException e) {
                continue;
            }
            for (String line : lines) {
                String[] f = line.trim().split("\\s+");
                if (f.length < 4 || !f[1].endsWith(localPort) || !f[2].endsWith(remotePort)) {
                    continue;
                }
                if (f[3].equals(ESTABLISHED)) {
                    return false;
                }
                found = true;
            }
        }
        // gone from the table (reset and freed) counts as closed, but only where the table can be read at all
        return found || Files.isReadable(TABLES.getFirst());
    }

    private static String hexPort(int port) {
        return String.format(Locale.ROOT, "%04X", port);
    }
}
