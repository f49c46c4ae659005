package dev.airlock.egress;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;

/** What the agent does inside a sandbox, on the host for tests: 127.0.0.1:PORT to the unix socket. */
final class TcpBridge implements AutoCloseable {

    private final ServerSocket server;
    private final Path socket;

    TcpBridge(Path socket) throws IOException {
        this.socket = socket;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().start(this::acceptLoop);
    }

    int port() {
        return server.getLocalPort();
    }

    Socket connect() throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), port());
        s.setSoTimeout(30_000);
        return s;
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket tcp = server.accept();
                SocketChannel unix = SocketChannel.open(StandardProtocolFamily.UNIX);
                try {
                    unix.connect(UnixDomainSocketAddress.of(socket));
                } catch (IOException e) {
                    close(tcp, unix);
                    continue;
                }
                Thread.ofVirtual().start(() -> {
                    // Streams of a socket close the whole socket: never in try-with-resources here,
                    // or the end of one direction would cut the other.
                    try {
                        InputStream in = tcp.getInputStream();
                        byte[] buf = new byte[65536];
                        for (int n; (n = in.read(buf)) > 0; ) {
                            ByteBuffer b = ByteBuffer.wrap(buf, 0, n);
                            while (b.hasRemaining()) {
                                unix.write(b);
                            }
                        }
                        unix.shutdownOutput();
                    } catch (IOException e) {
                        close(tcp, unix);
                    }
                });
                Thread.ofVirtual().start(() -> {
                    try {
                        OutputStream out = tcp.getOutputStream();
                        ByteBuffer b = ByteBuffer.allocate(65536);
                        while (unix.read(b) > 0) {
                            out.write(b.array(), 0, b.position());
                            b.clear();
                        }
                        tcp.shutdownOutput();
                    } catch (IOException e) {
                        // closed below
                    }
                    close(tcp, unix);
                });
            } catch (IOException e) {
                return;
            }
        }
    }

    private static void close(Socket tcp, SocketChannel unix) {
        try {
            tcp.close();
            unix.close();
        } catch (IOException e) {
            // done
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
