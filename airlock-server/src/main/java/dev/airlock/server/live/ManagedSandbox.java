package dev.airlock.server.live;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Language;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.wire.Json;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * A sandbox as the server holds it: the running sandbox plus what clients attached to it (labels,
 * lifetime, idle timeout) and the background processes started in it.
 */
public final class ManagedSandbox implements SandboxView {

    private final Sandbox sandbox;
    private final Map<String, String> labels;
    private final Instant createdAt;
    private final Duration idleTimeout;
    private final BackgroundProcesses processes;
    /** What features keep per sandbox (an interpreter's kernels), by type: made on first use, gone with the sandbox. */
    private final Map<Class<?>, Object> features = new ConcurrentHashMap<>();
    private final AtomicInteger running = new AtomicInteger();
    private final Language defaultLanguage;
    private final String owner;
    private final Profile profile;
    private volatile Instant expiresAt;
    private volatile Instant lastActivity;
    /** Set once, by the one destroy allowed per sandbox; from then on no client sees it. */
    private final AtomicBoolean destroying = new AtomicBoolean();
    private volatile SandboxSlots.Slot slot;
    private volatile Runnable workspaceTree;
    private final Isolation isolation;
    private final String node;

    /** {@code node}: the node of the cluster that holds it; null on a server that runs alone. */
    public ManagedSandbox(Sandbox sandbox, String owner, Profile profile, Map<String, String> labels, Instant createdAt, Duration ttl,
                          Duration idleTimeout, Language defaultLanguage, Isolation isolation, String node) {
        this.isolation = isolation;
        this.node = node;
        this.owner = owner;
        this.profile = profile;
        this.defaultLanguage = defaultLanguage;
        this.sandbox = sandbox;
        this.processes = new BackgroundProcesses(sandbox.id().value(), sandbox.spec().limits().outputBytes());
        this.labels = Map.copyOf(labels);
        this.createdAt = createdAt;
        this.idleTimeout = idleTimeout;
        this.expiresAt = createdAt.plus(ttl);
        this.lastActivity = createdAt;
    }

    /** The tier of isolation it got: its driver's. */
    public Isolation isolation() {
        return isolation;
    }

    @Override
    public String node() {
        return node;
    }

    public Sandbox sandbox() {
        return sandbox;
    }

    public String id() {
        return sandbox.id().value();
    }

    /** The client that created it; only that client sees it. */
    public String owner() {
        return owner;
    }

    /** The profile it was created with: what it may ask for later. */
    public Profile profile() {
        return profile;
    }

    /** The language of {@code code} executions that name none; null when the sandbox has no default. */
    public Language defaultLanguage() {
        return defaultLanguage;
    }

    @Override
    public boolean pausedToDisk() {
        return sandbox.isOnDisk();
    }

    @Override
    public String state() {
        return !sandbox.isOpen() ? "destroyed" : sandbox.isPaused() ? "paused" : "running";
    }

    @Override
    public SandboxSpec spec() {
        return sandbox.spec();
    }

    @Override
    public String imageDigest() {
        return sandbox.imageDigest();
    }

    @Override
    public NetworkPolicy network() {
        return sandbox.network();
    }

    @Override
    public IsolationDriver.Usage usage() {
        return sandbox.usage();
    }

    public Map<String, String> labels() {
        return labels;
    }

    public Instant createdAt() {
        return createdAt;
    }

    public Instant expiresAt() {
        return expiresAt;
    }

    public Duration idleTimeout() {
        return idleTimeout;
    }

    public Instant lastActivity() {
        return lastActivity;
    }

    void touch() {
        lastActivity = Instant.now();
    }

    public void extend(Duration ttl) {
        expiresAt = Instant.now().plus(ttl);
        touch();
    }

    /** Marks an execution as running: a sandbox that is working is not idle. */
    public void executionStarted() {
        running.incrementAndGet();
        touch();
    }

    public void executionEnded() {
        running.decrementAndGet();
        touch();
    }

    /**
     * Pauses or resumes the sandbox ({@link Sandbox#pause()}); returns whether that changed its
     * state. Resuming restarts its idle timeout.
     */
    public synchronized boolean setPaused(boolean pause) {
        if (sandbox.isPaused() == pause) {
            return false;
        }
        if (pause) {
            sandbox.pause();
        } else {
            sandbox.resume();
        }
        touch();
        return true;
    }

    /**
     * Pauses the sandbox to disk ({@link Sandbox#pauseToDisk}) into the directory {@code dir} makes,
     * asked only when it is not on disk already (making it empties it: a second pause must not
     * empty the first's); returns whether that changed its state. Resuming ({@link #setPaused})
     * restores it. A pause that fails leaves no directory behind.
     */
    public synchronized boolean pauseToDisk(java.util.function.Supplier<java.nio.file.Path> dir) {
        if (sandbox.isOnDisk()) {
            return false;
        }
        java.nio.file.Path image = dir.get();
        try {
            sandbox.pauseToDisk(image);
        } catch (RuntimeException e) {
            dev.airlock.core.HostFiles.deleteTree(image);
            throw e;
        }
        touch();
        return true;
    }

    /**
     * Why the sandbox should be destroyed at {@code now}, or null if it should live on. A paused
     * sandbox still ends at its time-to-live, but is never idle.
     */
    public String expiryReason(Instant now) {
        if (!now.isBefore(expiresAt)) {
            return "its time-to-live ran out";
        }
        if (idle(now)) {
            return "it was idle for " + idleTimeout.toSeconds() + "s";
        }
        return null;
    }

    /** Whether nothing touched it for its idle timeout: no execution runs, it is not paused, and no request came. */
    public boolean idle(Instant now) {
        return running.get() == 0 && !sandbox.isPaused() && !now.isBefore(lastActivity.plus(idleTimeout));
    }

    /** Set while an idle sandbox is being paused to disk ({@code onIdle: pauseToDisk}), so that it is parked once. */
    private final java.util.concurrent.atomic.AtomicBoolean parking = new java.util.concurrent.atomic.AtomicBoolean();

    /** Claims the parking of this idle sandbox; false while another parking of it runs. */
    public boolean startParking() {
        return parking.compareAndSet(false, true);
    }

    public void parked() {
        parking.set(false);
    }

    public boolean parking() {
        return parking.get();
    }

    boolean matches(Map<String, String> filter) {
        return filter.entrySet().stream().allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
    }

    /**
     * A feature's state of this sandbox (say, its interpreter contexts), made by {@code make} on
     * first use; it lives as long as this sandbox object.
     */
    public <T> T feature(Class<T> type, Supplier<T> make) {
        return type.cast(features.computeIfAbsent(type, t -> make.get()));
    }

    public BackgroundProcesses backgroundProcesses() {
        return processes;
    }

    /** Its background processes, running and the most recent ended ones, oldest first. */
    public List<BackgroundProcess> processes() {
        return processes.list();
    }

    public BackgroundProcess process(String processId) {
        BackgroundProcess p = processes.get(processId);
        if (p == null) {
            throw new AirlockException(AirlockException.Kind.NOT_FOUND, "process " + Json.printable(processId)
                    + " does not exist in sandbox " + id() + " (of its ended processes, only the newest are kept: at most "
                    + BackgroundProcesses.MAX_KEPT + " in all): list them with GET /v1/sandboxes/" + id() + "/processes");
        }
        return p;
    }

    /** The slot it holds against the server's limit and its client's quota, until it is gone. */
    public void holdSlot(SandboxSlots.Slot held) {
        this.slot = held;
        held.bind(id());
    }

    /** The snapshot tree its /workspace lies on (a restore on a tier that layers it), until it is gone. */
    public void holdWorkspaceTree(Runnable release) {
        this.workspaceTree = release;
    }

    /** It is destroyed, and its teardown runs on: a create at its limit may wait for its slot. */
    public void slotTearingDown() {
        SandboxSlots.Slot held = slot;
        if (held != null) {
            held.tearingDown();
        }
    }

    /** Lets go of what it held while it lived: its slot, and the snapshot tree its /workspace lay on. */
    public void releaseSlot() {
        SandboxSlots.Slot held = slot;
        if (held != null) {
            held.release();
        }
        Runnable tree = workspaceTree;
        if (tree != null) {
            tree.run();
        }
    }

    /** Claims the sandbox's one destroy; false when another destroy already has it. */
    public boolean beginDestroy() {
        return destroying.compareAndSet(false, true);
    }

    /** Being destroyed: it still counts against the limits, but no client can reach it. */
    public boolean destroying() {
        return destroying.get();
    }

    /**
     * A TCP connection to {@code 127.0.0.1:port} inside the sandbox, through its agent (a preview
     * port; which ports a client may reach is decided before, by {@code Command.OpenPort}).
     */
    @Override
    public dev.airlock.core.PortConnection connect(int port) throws java.io.IOException {
        return sandbox().files().connect(port);
    }
}
