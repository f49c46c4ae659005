package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxSpec;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A sandbox's user namespace, created before the runtime starts by a process running as the
 * sandbox's own host uid (the agent binary's {@code --hold-user-namespace} mode), and joined by the
 * runtime through {@link #path()}. The kernel charges per-user budgets, inotify instances and
 * watches among them, up the namespace chain to the namespace's creator: created by runc as host
 * root, every sandbox shared root's budget, so one sandbox could exhaust it for all; created as
 * the sandbox's own uid, each sandbox has a budget of its own.
 *
 * <p>The holder process lives only until the runtime has started the container (whose processes
 * then keep the namespace alive); {@link #close()} ends it. The driver, as root, writes the id maps.
 */
final class SandboxUserNamespace implements AutoCloseable {

    /** How long the holder may take to create the namespace and say so. */
    private static final long READY_TIMEOUT_SECONDS = 10;

    private final Process holder;
    /** The namespace's identity ({@code user:[inode]}), read while the holder is known to be ours. */
    private String identity;

    private SandboxUserNamespace(Process holder) {
        this.holder = holder;
    }

    /**
     * Creates the namespace as host uid {@code hostIdBase} (the sandbox's uid 0) and maps sandbox
     * ids 0..{@value OciConfig#ID_RANGE}-1 to {@code hostIdBase}.. for users and groups alike.
     */
    static SandboxUserNamespace create(Path agentBinary, long hostIdBase, Path log) {
        return create(agentBinary, hostIdBase, "0 " + hostIdBase + " " + OciConfig.ID_RANGE + "\n", log);
    }

    /**
     * A namespace for the idmapped mount of a shared workspace tree ({@link WorkspaceOverlay}): it maps
     * the trees' owner, {@link SandboxSpec#WORKSPACE_OWNER} (an id no host account uses), and only
     * it, to the host uid of the sandbox's user, for users and groups alike.
     */
    static SandboxUserNamespace forWorkspaceTree(Path agentBinary, long hostIdBase, Path log) {
        return create(agentBinary, hostIdBase, SandboxSpec.WORKSPACE_OWNER + " " + (hostIdBase + SystemImage.SANDBOX_UID) + " 1\n", log);
    }

    /** Creates a namespace as host uid {@code hostIdBase} and writes {@code map} as its uid and gid map. */
    private static SandboxUserNamespace create(Path agentBinary, long hostIdBase, String map, Path log) {
        Process holder;
        try {
            holder = new ProcessBuilder(agentBinary.toString(), "--hold-user-namespace", Long.toString(hostIdBase))
                    .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .start();
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot start " + agentBinary + " to create the sandbox's user namespace: " + e.getMessage());
        }
        SandboxUserNamespace ns = new SandboxUserNamespace(holder);
        try {
            ns.awaitReady(log);
            ns.identity = Files.readSymbolicLink(Path.of(ns.path())).toString();
            Path proc = Path.of("/proc", Long.toString(holder.pid()));
            Files.writeString(proc.resolve("uid_map"), map, StandardCharsets.US_ASCII);
            Files.writeString(proc.resolve("gid_map"), map, StandardCharsets.US_ASCII);
            return ns;
        } catch (IOException | RuntimeException e) {
            ns.close();
            if (e instanceof AirlockException ae) {
                throw ae;
            }
            throw AirlockException.unavailable("cannot map the ids of the sandbox's user namespace: " + e.getMessage());
        }
    }

    private void awaitReady(Path log) throws IOException {
        // The holder answers at once; a read on a virtual thread bounds the wait all the same.
        InputStream out = holder.getInputStream();
        java.util.concurrent.atomic.AtomicInteger said = new java.util.concurrent.atomic.AtomicInteger(-1);
        var ready = Thread.ofVirtual().start(() -> {
            try {
                said.set(out.read());
            } catch (IOException ignored) {
                // the check below sees that no 'R' came
            }
        });
        try {
            if (!ready.join(java.time.Duration.ofSeconds(READY_TIMEOUT_SECONDS)) || said.get() != 'R') {
                throw AirlockException.unavailable("the sandbox's user namespace could not be created as its own host uid: "
                        + lastLine(log) + " (user namespaces must be enabled: see 'airlock doctor')");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while creating the sandbox's user namespace");
        }
    }

    /** The namespace for the runtime to join, as long as this is open. */
    String path() {
        return "/proc/" + holder.pid() + "/ns/user";
    }

    /**
     * Checks that the process {@code hostPid} (the container's first) is in this namespace: the
     * runtime joined it by a /proc path, which names another namespace if the holder died and its
     * pid was reused in between.
     */
    void checkJoinedBy(long hostPid) {
        String joined;
        try {
            joined = Files.readSymbolicLink(Path.of("/proc", Long.toString(hostPid), "ns", "user")).toString();
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot read the user namespace of the sandbox's first process: " + e.getMessage());
        }
        if (!joined.equals(identity)) {
            throw AirlockException.unavailable("the sandbox started in user namespace " + joined + ", not in " + identity
                    + ", the one made for it: its holder process ended early; try again");
        }
    }

    /** Ends the holder: once the runtime has joined, the container's processes keep the namespace. */
    @Override
    public void close() {
        try (OutputStream in = holder.getOutputStream()) {
            // closing its stdin is the holder's signal to exit
        } catch (IOException ignored) {
            // it is gone already
        }
        try {
            if (!holder.waitFor(READY_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                holder.destroyForcibly().waitFor();
            }
        } catch (InterruptedException e) {
            holder.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    private static String lastLine(Path log) {
        try {
            return Files.readAllLines(log, StandardCharsets.UTF_8).stream().filter(l -> !l.isBlank()).reduce((a, b) -> b)
                    .map(l -> Printable.of(l, 300)).orElse("no message");
        } catch (IOException e) {
            return "no message";
        }
    }
}
