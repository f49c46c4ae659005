package dev.airlock.oci;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.AirlockException;
import dev.airlock.core.EngineInstance;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A checkpoint of a runsc sandbox: saves its processes with their memory into an image and lets it
 * run on ({@link #take}), or leaves them in the image until it is restored ({@link #stop}, {@link
 * #restart}: a pause to disk). runsc cannot save a connected host socket, so the agent first lets go of its channel
 * (DETACH; refused while an execution runs) and waits to connect again; runsc checkpoint then
 * stops the container, and it is restored at once from the image, in place (same id, bundle and
 * run directory), where the agent finds the host listening again. The listener is bound only
 * after the checkpoint: an agent that connected before it would make the checkpoint fail. Should
 * a step after DETACH fail, the sandbox is lost (its agent is gone) and the error says so.
 */
final class RunscCheckpoint {

    private static final Logger LOG = LoggerFactory.getLogger(RunscCheckpoint.class);
    /** The file beside runsc's image that names the socket its agent connects to once restored. */
    static final String RECONNECT_FILE = "airlock-agent-socket";
    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

    private final OciRuntime runtime;
    private final EngineInstance state;
    private final Duration startTimeout;

    RunscCheckpoint(OciRuntime runtime, EngineInstance state, Duration startTimeout) {
        this.runtime = runtime;
        this.state = state;
        this.startTimeout = startTimeout;
    }

    /** Checkpoints {@code sandbox} into {@code image} and has it running again. */
    void take(OciSandbox sandbox, Path image) {
        long started = System.nanoTime();
        stop(sandbox, image);
        long stopped = System.nanoTime();
        restart(sandbox, image);
        LOG.info("sandbox {}: checkpointed ({} bytes) and running again in {} ms (checkpoint and delete {} ms, restore {} ms)",
                sandbox.id(), imageBytes(image), (System.nanoTime() - started) / 1_000_000, (stopped - started) / 1_000_000,
                (System.nanoTime() - stopped) / 1_000_000);
    }

    /**
     * Checkpoints {@code sandbox} into {@code image} and deletes its container: its processes are
     * in the image only, until {@link #restart}. The agent lets go of its channel first.
     */
    void stop(OciSandbox sandbox, Path image) {
        SandboxId id = sandbox.id();
        String socketName = reconnectName();
        try {
            sandbox.agentClient().detach(socketName);
        } catch (IOException e) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id + " cannot be checkpointed now: " + e.getMessage()
                    + " (a checkpoint waits for no execution: let them end first)", e);
        }
        try {
            runtime.checkpoint(id.value(), image);
            // where the image's agent will connect: read back by each restore of it (start, restart)
            Files.writeString(image.resolve(RECONNECT_FILE), socketName);
            runtime.delete(id.value());
            Files.deleteIfExists(state.sandboxDir(id.value()).resolve("init.pid"));
        } catch (IOException | RuntimeException e) {
            throw lost(id, e);
        }
    }

    /** Restores {@code sandbox}'s processes from {@code image} in place (same id, bundle and run directory) and takes its agent back. */
    void restart(OciSandbox sandbox, Path image) {
        SandboxId id = sandbox.id();
        Path dir = state.sandboxDir(id.value());
        try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            // bound only now: an agent that connected before the checkpoint was written would have made it fail
            Path socket = dir.resolve("run").resolve(reconnectSocket(image));
            listener.bind(UnixDomainSocketAddress.of(socket));
            runtime.grantSocket(socket, (int) (sandbox.hostIdBase() + SystemImage.SANDBOX_UID));
            runtime.restoreDetached(id, dir, image, dir.resolve("runtime.log"));
            SocketChannel channel = OciDriver.acceptOne(listener, id, startTimeout);
            Files.deleteIfExists(socket);
            sandbox.reconnected(AgentClient.connect(channel, startTimeout));
        } catch (IOException | RuntimeException e) {
            throw lost(id, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("sandbox " + id + " was lost: interrupted while it was restored from its checkpoint");
        }
    }

    private static AirlockException lost(SandboxId id, Exception e) {
        if (e instanceof InterruptedIOException) {
            Thread.currentThread().interrupt();
        }
        return AirlockException.unavailable("sandbox " + id + " was lost while it was checkpointed or restored: " + e.getMessage()
                + " (destroy it; the checkpoint is not usable)");
    }

    /**
     * A random socket name for a detached agent to connect to: {@code a} and 10 of a-z0-9 (about 52
     * bits), as long as the longest socket name the state directory leaves room for ({@code
     * egress.sock}, StateDirectory.MAX_ROOT_BYTES).
     */
    private static String reconnectName() {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        StringBuilder sb = new StringBuilder("a");
        for (int i = 0; i < 10; i++) {
            sb.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
        }
        return sb.toString();
    }

    /** The socket name a checkpoint image's agent connects to ({@link #RECONNECT_FILE}), checked. */
    static String reconnectSocket(Path image) throws IOException {
        String name = Files.readString(image.resolve(RECONNECT_FILE)).strip();
        if (!name.matches("a[0-9a-z]{10}")) {
            throw AirlockException.invalid("the checkpoint image names no agent socket Airlock made: " + Printable.of(name, 80));
        }
        return name;
    }

    /** The bytes of a checkpoint image's files, for the log; -1 when they cannot be read. */
    private static long imageBytes(Path image) {
        try (var files = Files.list(image)) {
            long bytes = 0;
            for (Path f : files.toList()) {
                bytes += Files.size(f);
            }
            return bytes;
        } catch (IOException e) {
            return -1;
        }
    }
}
