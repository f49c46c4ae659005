package dev.airlock.core.contract;

import dev.airlock.core.ExecResult;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxBroker;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The driver's part of egress: the channel. A sandbox whose broker attachment is bridged reaches
 * the broker's unix socket, and nothing else, through {@code 127.0.0.1:3128} inside (the agent's
 * bridge); the attachment's variables reach every execution; network changes reach the
 * attachment; the attachment is closed when the sandbox is gone; a sandbox without network has
 * nothing on that port. The broker here answers each connection with {@code bridged <line>}: the
 * real one (the egress proxy and its policy) is proven by the egress module's own tests.
 */
public abstract class EgressBridgeContract extends ContractTestBase {

    private final EchoBroker broker = new EchoBroker();

    protected EgressBridgeContract(DriverContract driver) {
        super(driver);
    }

    @Override
    protected SandboxBroker broker() {
        return broker;
    }

    private static final NetworkPolicy SOME_NETWORK = NetworkPolicy.of(List.of(NetworkPolicy.Destination.of("example.com", 443)),
            List.of(), List.of(), Map.of());

    private static final String DIAL = """
            import socket
            s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
            s.sendall(b"hello from inside\\n")
            print(s.makefile().readline().strip())
            """;

    @Test
    @Tag("smoke")
    void theAgentBridgesLoopbackToTheBrokersSocket() {
        try (Sandbox sb = engine.create(spec().withNetwork(SOME_NETWORK))) {
            ExecResult r = ok(python(sb, DIAL));
            assertThat(r.stdoutText().strip()).isEqualTo("bridged hello from inside");
            assertThat(broker.lines.get(sb.id())).containsExactly("hello from inside");
        }
    }

    @Test
    void theAttachmentsVariablesReachEveryExecution() {
        try (Sandbox sb = engine.create(spec().withNetwork(SOME_NETWORK))) {
            assertThat(ok(exec(sb, "/bin/sh", "-c", "echo $AIRLOCK_TEST_BRIDGE")).stdoutText().strip()).isEqualTo(sb.id().value());
        }
    }

    @Test
    void networkChangesReachTheAttachmentAndItClosesWithTheSandbox() {
        SandboxId id;
        try (Sandbox sb = engine.create(spec().withNetwork(SOME_NETWORK))) {
            id = sb.id();
            NetworkPolicy narrower = NetworkPolicy.of(List.of(NetworkPolicy.Destination.of("example.com", 443)), List.of("example.com"),
                    List.of(), Map.of());
            sb.updateNetworkPolicy(narrower);
            assertThat(broker.updates.get(id)).containsExactly(narrower);
            assertThat(broker.closed).doesNotContain(id);
        }
        assertThat(broker.closed).contains(id);
    }

    @Test
    void aSandboxWithoutNetworkHasNothingOnTheBridgePort() {
        try (Sandbox sb = engine.create(spec())) {
            ExecResult r = python(sb, """
                    import socket
                    try:
                        socket.create_connection(("127.0.0.1", 3128), timeout=5)
                        print("connected")
                    except OSError as e:
                        print("refused", e.errno)
                    """);
            assertThat(r.stdoutText()).startsWith("refused");
            assertThat(broker.lines).doesNotContainKey(sb.id());
        }
    }

    /** Answers each line on a sandbox's bridge socket with {@code bridged <line>}, and records what it was asked. */
    private static final class EchoBroker implements SandboxBroker {
        final Map<SandboxId, List<String>> lines = new ConcurrentHashMap<>();
        final Map<SandboxId, List<NetworkPolicy>> updates = new ConcurrentHashMap<>();
        final List<SandboxId> closed = new CopyOnWriteArrayList<>();

        @Override
        public Attachment attach(SandboxId id, SandboxSpec spec, Path runDir, int sandboxHostUid) {
            if (spec.network().isNone()) {
                return Attachment.NONE;
            }
            Path socket = runDir.resolve(BRIDGE_SOCKET);
            ServerSocketChannel server;
            try {
                server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
                server.bind(UnixDomainSocketAddress.of(socket));
                Files.setAttribute(socket, "unix:uid", sandboxHostUid);
                Files.setAttribute(socket, "unix:gid", sandboxHostUid);
                Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            Thread.ofVirtual().name("echo-broker-" + id).start(() -> serve(id, server));
            return new Attachment() {
                @Override
                public boolean bridged() {
                    return true;
                }

                @Override
                public Map<String, String> environment() {
                    return Map.of("AIRLOCK_TEST_BRIDGE", id.value());
                }

                @Override
                public void updateNetworkPolicy(NetworkPolicy policy) {
                    updates.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(policy);
                }

                @Override
                public void close() {
                    try {
                        server.close();
                        Files.deleteIfExists(socket);
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                    closed.add(id);
                }
            };
        }

        private void serve(SandboxId id, ServerSocketChannel server) {
            while (server.isOpen()) {
                try (SocketChannel c = server.accept()) {
                    ByteBuffer in = ByteBuffer.allocate(4096);
                    StringBuilder line = new StringBuilder();
                    while (line.indexOf("\n") < 0 && c.read(in) > 0) {
                        line.append(new String(in.array(), 0, in.position(), StandardCharsets.UTF_8));
                        in.clear();
                    }
                    String text = line.toString().strip();
                    lines.computeIfAbsent(id, k -> new CopyOnWriteArrayList<>()).add(text);
                    c.write(ByteBuffer.wrap(("bridged " + text + "\n").getBytes(StandardCharsets.UTF_8)));
                } catch (IOException e) {
                    return; // closed with the sandbox
                }
            }
        }
    }
}
