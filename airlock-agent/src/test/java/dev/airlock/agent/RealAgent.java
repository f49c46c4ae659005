package dev.airlock.agent;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The real agent binary run directly on the host, connected as the engine connects it: the test
 * listens, the agent connects. Not PID 1 here, so on close the agent kills only what is below it
 * in the process tree.
 */
final class RealAgent implements AutoCloseable {

    final Path dir;
    final Process process;
    final AgentClient client;

    private RealAgent(Path dir, Process process, AgentClient client) {
        this.dir = dir;
        this.process = process;
        this.client = client;
    }

    static RealAgent start(Path dir, String... options) throws Exception {
        Connection connection = launch(dir, options);
        try {
            return new RealAgent(dir, connection.process(), AgentClient.connect(connection.channel(), Duration.ofSeconds(10)));
        } catch (Exception e) {
            connection.process().destroyForcibly();
            throw e;
        }
    }

    /** The agent process and its raw connection, for tests that speak the protocol themselves. */
    record Connection(Process process, SocketChannel channel) {
    }

    static Connection launch(Path dir, String... options) throws Exception {
        Path binary = AgentBinary.installTo(dir);
        Path socket = dir.resolve("agent.sock");
        try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            listener.bind(UnixDomainSocketAddress.of(socket));
            java.util.List<String> command = new java.util.ArrayList<>();
            command.add(binary.toString());
            command.addAll(java.util.List.of(options));
            command.add(socket.toString());
            Process process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("agent.log").toFile())
                    .start();
            try {
                // accept() has no timeout: a broken agent would hang the test instead of failing it.
                SocketChannel channel = CompletableFuture.supplyAsync(() -> accept(listener))
                        .get(10, TimeUnit.SECONDS);
                Files.delete(socket);
                return new Connection(process, channel);
            } catch (Exception e) {
                process.destroyForcibly();
                throw e;
            }
        }
    }

    private static SocketChannel accept(ServerSocketChannel listener) {
        try {
            return listener.accept();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    /** Closes the connection; the agent then kills what it started and exits. */
    @Override
    public void close() throws Exception {
        client.close();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("the agent did not exit within 10 s after the connection closed");
        }
    }
}
