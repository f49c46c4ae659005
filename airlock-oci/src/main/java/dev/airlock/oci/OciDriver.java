package dev.airlock.oci;

import dev.airlock.agent.AgentBinary;
import dev.airlock.agent.AgentClient;
import dev.airlock.core.AirlockException;
import dev.airlock.core.EngineInstance;
import dev.airlock.core.HostFiles;
import dev.airlock.core.HostInputs;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.SandboxBroker;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.Trace;
import dev.airlock.oci.image.ImageStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The OCI isolation driver: each sandbox is a container of runc (or crun, or runsc) whose PID 1 is
 * the Airlock agent. The host reaches the agent through a unix socket in a per-sandbox directory
 * mounted at /run/airlock, so the sandbox needs no network interface for it. The engine's {@link
 * SandboxBroker} puts its own sockets and files there (the egress proxy's); this driver only has
 * the agent bridge to them.
 */
public final class OciDriver implements IsolationDriver {

    private static final Logger LOG = LoggerFactory.getLogger(OciDriver.class);
    static final String SOCKET_NAME = "agent.sock";
    /** Where in a sandbox's directory its {@link WorkspaceOverlay} is mounted, if it has one. */
    static final String WORKSPACE_DIR = "workspace";

    private final OciDriverConfig config;
    private final OciRuntime runtime;
    private final EngineInstance state;
    private final SystemImage systemImage;
    /** Imported and built images; the store is only read here. */
    private final ImageStore images;
    private final ObjectNode seccomp;
    private final Map<SandboxId, OciSandbox> live = new ConcurrentHashMap<>();
    private final UidSlots uidSlots;
    private final HostInputs hostInputs;
    /** The agent binary on the host: also the step that creates each sandbox's user namespace. */
    private final Path agentBinary;

    public OciDriver(OciDriverConfig config) {
        this.config = config;
        this.runtime = OciRuntime.find(config.runtime());
        if (!config.weakenings().isEmpty()) {
            LOG.warn("UNSAFE: sandboxes of this driver are deliberately weakened ({}): for airlock verify only", config.weakenings());
        }
        if (Cgroups.v2Root() == null && !Files.isDirectory(Cgroups.v1Hierarchy("freezer"))) {
            LOG.warn("this host has neither a cgroup v2 hierarchy nor the v1 freezer: executions get no cgroup of their own; a"
                    + " timeout or kill ends everything an execution started through the agent's supervisor alone");
        }
        Trace.mark("runtime found");
        this.seccomp = Seccomp.defaultProfile();
        Trace.mark("seccomp profile read");
        this.state = StateDirectory.create(config.stateRoot());
        Trace.mark("state directory made");
        this.uidSlots = new UidSlots(config.stateRoot(), config.hostIdBase());
        Set<Path> keptFromInputs = new HashSet<>(config.protectedPaths());
        keptFromInputs.add(config.stateRoot());
        this.hostInputs = new HostInputs(keptFromInputs);
        this.images = ImageStore.at(config.imageRoot());
        try {
            this.systemImage = SystemImage.build(Path.of("/"), StateDirectory.imageRoot(state));
            Trace.mark("system image laid out");
            this.agentBinary = AgentBinary.installTo(StateDirectory.imageRoot(state).resolve(SystemImage.AGENT_DIR.substring(1)));
            Trace.mark("agent installed");
        } catch (IOException | RuntimeException e) {
            state.close();
            if (e instanceof RuntimeException re) {
                throw re;
            }
            throw AirlockException.internal("cannot install the agent into the system image: " + e.getMessage(), e);
        }
    }

    @Override
    public String name() {
        return "oci/" + runtime.name();
    }

    /** runsc: gVisor; runc and crun: a container on the host's kernel. */
    @Override
    public Isolation isolation() {
        return runtime.isGvisor() ? Isolation.GVISOR : Isolation.CONTAINER;
    }

    @Override
    public String instance() {
        return state.name();
    }

    OciRuntime runtime() {
        return runtime;
    }

    /** The images of the store ({@link OciDriverConfig#imageRoot()}). */
    @Override
    public List<dev.airlock.core.ImageInfo> images() {
        return images.list();
    }

    /**
     * Under runc, crun and Airlock's own runtime: a restored sandbox's {@code /workspace} is a
     * {@link WorkspaceOverlay} on the snapshot's tree, idmapped through a user namespace made for
     * that mapping before the runtime starts. Not under runsc: its bind mounts can be overlaid only
     * by the global {@code --overlay} flag.
     */
    @Override
    public boolean layersWorkspace() {
        return !runtime.isGvisor();
    }

    @Override
    public void check(SandboxSpec spec, List<String> requiredPrograms) {
        checkImage(spec, requiredPrograms);
        hostInputs.resolve(spec.inputs());
    }

    private void checkImage(SandboxSpec spec, List<String> requiredPrograms) {
        if (!SandboxSpec.SYSTEM_IMAGE.equals(spec.image())) {
            images.requireExecutables(spec.image(), requiredPrograms);
            return;
        }
        for (String program : requiredPrograms) {
            if (!systemImage.hasExecutable(program)) {
                throw AirlockException.unavailable("the image 'system' has no '" + program
                        + "': install it on the host under /usr (apt-get install), or choose another language");
            }
        }
    }

    @Override
    public DriverSandbox create(SandboxId id, SandboxSpec spec, SandboxBroker broker) {
        return start(id, spec, broker, null);
    }

    /** Under runsc: the checkpointed processes, memory and in-memory files come back; elsewhere refused. */
    @Override
    public DriverSandbox restore(SandboxId id, SandboxSpec spec, SandboxBroker broker, Path checkpoint) {
        if (!runtime.isGvisor()) {
            throw AirlockException.unavailable(IsolationDriver.noProcessesSaved(isolation()));
        }
        return start(id, spec, broker, checkpoint);
    }

    /**
     * A restored sandbox's {@code /workspace}: the snapshot's tree, shared copy-on-write, its owner
     * idmapped to this sandbox's user through a namespace that maps that one id.
     */
    private Path layWorkspace(Path dir, SandboxSpec spec, long hostIdBase) {
        try (SandboxUserNamespace treeIds = SandboxUserNamespace.forWorkspaceTree(agentBinary, hostIdBase, dir.resolve("runtime.log"))) {
            return WorkspaceOverlay.mount(dir.resolve(WORKSPACE_DIR), spec.workspaceBase(), treeIds.path(), hostIdBase, spec.limits().diskBytes());
        }
    }

    /** Creates the sandbox, fresh ({@code checkpoint} null) or restored from a checkpoint image. */
    private DriverSandbox start(SandboxId id, SandboxSpec spec, SandboxBroker broker, Path checkpoint) {
        checkImage(spec, List.of());
        ServerLimits.checkInheritable(spec.limits());
        List<HostInputs.Resolved> inputs = hostInputs.resolve(spec.inputs());
        Path dir = state.sandboxDir(id.value());
        Path runDir = dir.resolve("run");
        boolean started = false;
        long hostIdBase = uidSlots.allocate(id.value());
        ImageStore.Lease image = null;
        try {
            // a stored image is held while the sandbox lives: 'airlock image rm' is refused meanwhile
            image = SandboxSpec.SYSTEM_IMAGE.equals(spec.image()) ? null : images.useRequested(spec.image());
            SandboxRoot root = image == null ? systemImage : SandboxRoot.Stored.of(image.rootfs(), agentBinary.getParent());
            runtime.createSandboxDirectory(dir);
            StateDirectory.createTraversable(runDir);
            // a restored agent connects where its checkpoint told it to (DETACH), a fresh one to agent.sock
            Path socket = runDir.resolve(checkpoint == null ? SOCKET_NAME : RunscCheckpoint.reconnectSocket(checkpoint));
            try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
                listener.bind(UnixDomainSocketAddress.of(socket));
                // Only the sandbox's user (and host root) may connect.
                long sandboxHostUid = hostIdBase + SystemImage.SANDBOX_UID;
                runtime.grantSocket(socket, (int) sandboxHostUid);
                boolean bridged = broker.attach(id, spec, runDir, (int) sandboxHostUid).bridged();
                if (bridged) {
                    // the broker's socket, opened to the sandbox the way this runtime's sandboxes connect
                    runtime.grantSocket(runDir.resolve(SandboxBroker.BRIDGE_SOCKET), (int) sandboxHostUid);
                }
                Path inputsDir = dir.resolve("inputs");
                if (!inputs.isEmpty()) {
                    HostInputs.createMountPoints(inputsDir, inputs);
                }
                List<OciConfig.Mount> procViews = runtime.needsProcViews() ? ProcViews.write(dir.resolve("proc"), spec.limits()) : List.of();
                long agentHostPid;
                Trace.mark("sandbox directory made");
                try (SandboxUserNamespace userNamespace = runtime.joinsUserNamespace()
                        ? SandboxUserNamespace.create(agentBinary, hostIdBase, dir.resolve("runtime.log")) : null) {
                    Trace.mark("user namespace made");
                    Path workspace = spec.workspaceBase() == null || !layersWorkspace() ? null : layWorkspace(dir, spec, hostIdBase);
                    ObjectNode bundle = OciConfig.weaken(runtime.adapt(OciConfig.config(root, spec.limits(),
                            OciConfig.agentCommand(spec.limits(), bridged, SOCKET_NAME), OciConfig.agentEnvironment(), runDir, inputsDir, inputs, procViews,
                            Cgroups.pathOf(id.value()), hostIdBase, userNamespace == null ? null : userNamespace.path(), workspace, seccomp)),
                            config.weakenings());
                    runtime.writeBundle(dir, bundle);
                    Trace.mark("bundle written");
                    started = true;
                    agentHostPid = checkpoint == null ? runtime.runDetached(id, dir, bundle, dir.resolve("runtime.log"))
                            : runtime.restoreDetached(id, dir, checkpoint, dir.resolve("runtime.log"));
                    Trace.mark("runtime run returned");
                    if (userNamespace != null) {
                        userNamespace.checkJoinedBy(agentHostPid);
                    }
                }
                Trace.mark("user namespace holder ended");
                SocketChannel channel = acceptOne(listener, id, config.startTimeout());
                // The socket file goes at once: no second channel can ever be opened into the host.
                Files.deleteIfExists(socket);
                AgentClient agent = AgentClient.connect(channel, config.startTimeout());
                Trace.mark("agent connected");
                OciSandbox sandbox = new OciSandbox(id, agent,
                        runtime.supportsExecCgroups() ? ExecCgroups.of(id.value(), agentHostPid) : null, this, hostIdBase, image);
                live.put(id, sandbox);
                return sandbox;
            }
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            // an Error too (a class missing from a half-updated install): the slot and state must not leak
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (started) {
                // The runtime may have created the container before it failed or was cancelled.
                runtime.delete(id.value());
            }
            unmountWorkspace(dir);
            HostFiles.deleteTree(dir);
            uidSlots.release(hostIdBase);
            if (image != null) {
                image.close();
            }
            if (e instanceof AirlockException ae) {
                throw ae;
            }
            if (e instanceof Error error) {
                throw error;
            }
            throw new AirlockException(AirlockException.Kind.UNAVAILABLE, "cannot start sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    /** The agent's connection to {@code listener}, within {@code timeout}. */
    static SocketChannel acceptOne(ServerSocketChannel listener, SandboxId id, java.time.Duration timeout) throws IOException {
        listener.configureBlocking(false);
        try (Selector selector = Selector.open()) {
            listener.register(selector, SelectionKey.OP_ACCEPT);
            if (selector.select(timeout.toMillis()) == 0) {
                throw new AirlockException(AirlockException.Kind.UNAVAILABLE, "sandbox " + id + " started but its agent did not connect within "
                        + timeout.toSeconds() + "s");
            }
            SocketChannel channel = listener.accept();
            channel.configureBlocking(true);
            return channel;
        }
    }


    /** Saves the sandbox's processes with their memory into {@code image} and lets it run on (runsc only: {@link RunscCheckpoint}). */
    void checkpoint(OciSandbox sandbox, Path image) {
        if (!runtime.isGvisor()) {
            throw AirlockException.unavailable("sandbox " + sandbox.id() + ": " + IsolationDriver.noProcessesSaved(isolation()));
        }
        new RunscCheckpoint(runtime, state, config.startTimeout()).take(sandbox, image);
    }

    /** Pauses a runsc sandbox to disk ({@link OciSandbox#suspend}): its checkpoint into {@code image}, then its container deleted. */
    void suspend(OciSandbox sandbox, Path image) {
        if (!runtime.isGvisor()) {
            throw AirlockException.unavailable("sandbox " + sandbox.id() + ": " + IsolationDriver.noPauseToDisk(isolation()));
        }
        new RunscCheckpoint(runtime, state, config.startTimeout()).stop(sandbox, image);
    }

    /** Restores a sandbox paused to disk from {@code image}, in place. */
    void wake(OciSandbox sandbox, Path image) {
        new RunscCheckpoint(runtime, state, config.startTimeout()).restart(sandbox, image);
    }

    long oomKills(SandboxId id) {
        return Cgroups.oomKills(id.value());
    }

    /** Freezes or thaws every process of one sandbox, its agent included. */
    void freeze(OciSandbox sandbox, boolean freeze) {
        runtime.freeze(sandbox.id().value(), freeze);
    }

    /**
     * Unmounts a restored sandbox's {@code /workspace} overlay, if it has one. Only then is {@link
     * WorkspaceOverlay} loaded, with its native calls: a sandbox without one never needs the JVM's
     * native access (a one-shot {@code airlock run} started without {@code --enable-native-access}
     * would otherwise print the JVM's warning on its stderr).
     */
    private static void unmountWorkspace(Path sandboxDir) {
        Path overlay = sandboxDir.resolve(WORKSPACE_DIR);
        if (Files.isDirectory(overlay, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            WorkspaceOverlay.unmount(overlay);
        }
    }

    /** Kills and removes one sandbox. The agent first, so the runtime has less to kill. */
    void destroy(OciSandbox sandbox) {
        live.remove(sandbox.id());
        sandbox.agent().close();
        Trace.mark("agent closed");
        runtime.delete(sandbox.id().value());
        Trace.mark("runtime delete returned");
        unmountWorkspace(state.sandboxDir(sandbox.id().value()));
        HostFiles.deleteTree(state.sandboxDir(sandbox.id().value()));
        if (sandbox.suspended() != null) {
            HostFiles.deleteTree(sandbox.suspended()); // paused to disk: its saved processes go with it
        }
        uidSlots.release(sandbox.hostIdBase());
        if (sandbox.image() != null) {
            sandbox.image().close();
        }
    }

    @Override
    public List<String> reapOrphans() {
        List<String> reaped = new ArrayList<>();
        // Containers of every instance that is gone, also one whose state directory went first (a killed engine's).
        for (String container : runtime.list()) {
            String instance = SandboxId.instanceOf(container);
            if (instance != null && !state.isAlive(instance) && runtime.delete(container)) {
                reaped.add("container " + container);
            }
        }
        Trace.mark("runtime list read");
        reaped.addAll(state.removeDeadInstances(instance -> {
            List<String> ranges = new ArrayList<>();
            for (Path slot : uidSlots.held("al-" + instance + "-")) {
                HostFiles.deleteTree(slot);
                ranges.add("host id range " + slot.getFileName());
            }
            return ranges;
        }));
        Trace.mark("dead instances removed");
        // Cgroups of every instance that is gone, including one whose state was removed while a cgroup
        // still held a process that has since exited (an ended runtime's leftovers outlive its destroy).
        for (Path cgroup : Cgroups.find("al-")) {
            String instance = SandboxId.instanceOf(cgroup.getFileName().toString());
            if (instance != null && !state.isAlive(instance) && Cgroups.remove(cgroup)) {
                reaped.add("cgroup " + cgroup);
            }
        }
        reaped.forEach(line -> LOG.info("reaped orphan {}", line));
        return reaped;
    }

    @Override
    public boolean isAlive(String instance) {
        return state.isAlive(instance);
    }

    @Override
    public void close() {
        state.closeAfterDestroying(live.values());
        runtime.close();
        Trace.mark("state directory removed");
    }
}
