package dev.airlock.egress;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * A connected unix-socket pair, as a sandbox's connection reaches the proxy: {@link #proxySide}
 * is what a stage reads, {@link #sandbox} what the test, playing the sandbox, writes and reads.
 */
final class SocketPair implements AutoCloseable {

    final SocketChannel sandbox;
    final ClientChannel proxySide;

    private SocketPair(SocketChannel sandbox, SocketChannel proxy, int maxHandshakeBytes) {
        this.sandbox = sandbox;
        this.proxySide = new ClientChannel(proxy, maxHandshakeBytes);
    }

    static SocketPair open(Path dir, int maxHandshakeBytes) throws IOException {
        Path socket = Files.createTempDirectory(dir, "pair").resolve("s.sock");
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(socket));
            SocketChannel sandbox = SocketChannel.open(UnixDomainSocketAddress.of(socket));
            SocketChannel proxy = server.accept();
            Files.delete(socket);
            return new SocketPair(sandbox, proxy, maxHandshakeBytes);
        }
    }

    /** The sandbox sends {@code bytes}. */
    SocketPair send(byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
            sandbox.write(b);
        }
        return this;
    }

    /** The sandbox sends {@code bytes} and ends its side, as a client that gives up mid-handshake. */
    SocketPair sendAndEnd(byte[] bytes) throws IOException {
        send(bytes);
        sandbox.shutdownOutput();
        return this;
    }

    /** A connection around the proxy's side, under {@code rules}. */
    EgressConnection connection(Supplier<EgressRules> rules, SandboxBudget budget) {
        return new EgressConnection(proxySide, rules, budget);
    }

    /** Everything the proxy side wrote, once it closed its side. */
    byte[] answerAfterClose() throws IOException {
        proxySide.close();
        ByteBuffer all = ByteBuffer.allocate(1 << 16);
        while (sandbox.read(all) > 0) {
            if (!all.hasRemaining()) {
                break;
            }
        }
        all.flip();
        byte[] out = new byte[all.remaining()];
        all.get(out);
        return out;
    }

    @Override
    public void close() throws IOException {
        sandbox.close();
        proxySide.close();
    }
}
