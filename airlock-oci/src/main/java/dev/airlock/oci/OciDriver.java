package dev.airlock.oci;

import dev.airlock.agent.AgentBinary;
import dev.airlock.agent.AgentClient;
import dev.airlock.core.AirlockException;
import dev.airlock.core.Credential;
import dev.airlock.core.HostFiles;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressProxy;
import dev.airlock.egress.EgressRules;
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
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The OCI isolation driver: each sandbox is a container of runc (or crun, or runsc) whose PID 1 is
 * the Airlock agent. The host reaches the agent through a unix socket in a per-sandbox directory
 * mounted at /run/airlock, so the sandbox needs no network interface for it.
 */
public final class OciDriver implements IsolationDriver {

    private static final Logger LOG = LoggerFactory.getLogger(OciDriver.class);
    static final String SOCKET_NAME = "agent.sock";
    static final String EGRESS_SOCKET_NAME = "egress.sock";
    /** The sandbox's CA certificate, and the host's CA bundle with it appended (run/, so /run/airlock inside). */
    static final String CA_FILE_NAME = "airlock-ca.pem";
    static final String CA_BUNDLE_FILE_NAME = "ca-bundle.pem";
    private static final List<String> HOST_CA_BUNDLES = List.of("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/cert.pem");

    private final OciDriverConfig config;
    private final OciRuntime runtime;
    private final StateDirectory state;
    private final SystemImage systemImage;
    private final ObjectNode seccomp;
    private final Map<SandboxId, OciSandbox> live = new ConcurrentHashMap<>();
    private final UidSlots uidSlots;
    private final EgressSettings egress;
    private final HostInputs hostInputs;
    /** The agent binary on the host: also the step that creates each sandbox's user namespace. */
    private final Path agentBinary;

    public OciDriver(OciDriverConfig config) {
        this(config, EgressSettings.DEFAULTS);
    }

    /** A driver whose sandboxes with a network policy get an egress proxy set up by {@code egress}. */
    public OciDriver(OciDriverConfig config, EgressSettings egress) {
        this.config = config;
        this.egress = egress;
        this.runtime = OciRuntime.find(config.runtime());
        if (!config.weakenings().isEmpty()) {
            LOG.warn("UNSAFE: sandboxes of this driver are deliberately weakened ({}): for airlock verify only", config.weakenings());
        }
        if (Cgroups.v2Root() == null && !Files.isDirectory(Cgroups.v1Hierarchy("freezer"))) {
            LOG.warn("this host has neither a cgroup v2 hierarchy nor the v1 freezer: executions get no cgroup of their own, so a"
                    + " process that leaves its process group (setsid) survives its execution's timeout or kill until the sandbox ends");
        }
        this.seccomp = Seccomp.defaultProfile();
        this.state = StateDirectory.create(config.stateRoot());
        this.uidSlots = new UidSlots(config.stateRoot(), config.hostIdBase());
        Set<Path> keptFromInputs = new HashSet<>(config.protectedPaths());
        keptFromInputs.add(config.stateRoot());
        this.hostInputs = new HostInputs(keptFromInputs);
        try {
            this.systemImage = SystemImage.build(Path.of("/"), state.imageRoot());
            this.agentBinary = AgentBinary.installTo(state.imageRoot().resolve(SystemImage.AGENT_DIR.substring(1)));
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

    @Override
    public String instance() {
        return state.instance();
    }

    OciRuntime runtime() {
        return runtime;
    }

    @Override
    public void check(SandboxSpec spec, List<String> requiredPrograms) {
        checkImage(spec, requiredPrograms);
        hostInputs.resolve(spec.inputs());
    }

    private void checkImage(SandboxSpec spec, List<String> requiredPrograms) {
        if (!SandboxSpec.SYSTEM_IMAGE.equals(spec.image())) {
            throw AirlockException.invalid("unknown image '" + spec.image() + "': this driver serves the image 'system'");
        }
        if (!spec.credentials().isEmpty() && spec.network().isNone()) {
            throw AirlockException.invalid("the sandbox has credentials but no network policy: credentials are injected by the egress proxy,"
                    + " so allow their destinations in the network policy (or drop the credentials)");
        }
        for (String program : requiredPrograms) {
            if (!systemImage.hasExecutable(program)) {
                throw AirlockException.unavailable("the image 'system' has no '" + program
                        + "': install it on the host under /usr (apt-get install), or choose another language");
            }
        }
    }

    @Override
    public DriverSandbox create(SandboxId id, SandboxSpec spec) {
        checkImage(spec, List.of());
        ServerLimits.checkInheritable(spec.limits());
        List<HostInputs.Resolved> inputs = hostInputs.resolve(spec.inputs());
        Path dir = state.sandboxDir(id.value());
        Path runDir = dir.resolve("run");
        Path socket = runDir.resolve(SOCKET_NAME);
        boolean started = false;
        long hostIdBase = uidSlots.allocate(id.value());
        EgressProxy proxy = null;
        try {
            runtime.createSandboxDirectory(dir);
            StateDirectory.createTraversable(runDir);
            try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
                listener.bind(UnixDomainSocketAddress.of(socket));
                // Only the sandbox's user (and host root) may connect.
                long sandboxHostUid = hostIdBase + SystemImage.SANDBOX_UID;
                runtime.grantSocket(socket, (int) sandboxHostUid);
                proxy = startEgress(id, spec, runDir, (int) sandboxHostUid);
                Map<String, String> environment = proxy == null ? Map.of() : interceptionEnvironment(spec, proxy, runDir);
                Path inputsDir = dir.resolve("inputs");
                if (!inputs.isEmpty()) {
                    HostInputs.createMountPoints(inputsDir, inputs);
                }
                List<OciConfig.Mount> procViews = runtime.needsProcViews() ? ProcViews.write(dir.resolve("proc"), spec.limits()) : List.of();
                long agentHostPid;
                try (SandboxUserNamespace userNamespace = runtime.joinsUserNamespace()
                        ? SandboxUserNamespace.create(agentBinary, hostIdBase, dir.resolve("runtime.log")) : null) {
                    byte[] bundle = OciConfig.write(systemImage, spec.limits(),
                            agentCommand(spec.limits(), proxy != null), agentEnvironment(), runDir, inputsDir, inputs, procViews,
                            Cgroups.pathOf(id.value()), hostIdBase, userNamespace == null ? null : userNamespace.path(), seccomp);
                    Files.write(dir.resolve("config.json"), OciConfig.weaken(runtime.adapt(bundle), config.weakenings()));
                    started = true;
                    agentHostPid = runtime.runDetached(id, dir, dir.resolve("runtime.log"));
                    if (userNamespace != null) {
                        userNamespace.checkJoinedBy(agentHostPid);
                    }
                }
                SocketChannel channel = acceptOne(listener, id);
                // The socket file goes at once: no second channel can ever be opened into the host.
                Files.deleteIfExists(socket);
                AgentClient agent = AgentClient.connect(channel, config.startTimeout());
                OciSandbox sandbox = new OciSandbox(id, agent,
                        runtime.supportsExecCgroups() ? ExecCgroups.of(id.value(), agentHostPid) : null, this, hostIdBase, proxy, environment);
                live.put(id, sandbox);
                return sandbox;
            }
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            // an Error too (a class missing from a half-updated install): the slot and state must not leak
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (proxy != null) {
                proxy.close();
            }
            if (started) {
                // The runtime may have created the container before it failed or was cancelled.
                runtime.delete(id.value());
            }
            HostFiles.deleteTree(dir);
            uidSlots.release(hostIdBase);
            if (e instanceof AirlockException ae) {
                throw ae;
            }
            if (e instanceof Error error) {
                throw error;
            }
            throw new AirlockException(AirlockException.Kind.UNAVAILABLE, "cannot start sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    /**
     * Starts the sandbox's egress proxy on {@code run/egress.sock} (mounted at /run/airlock), or
     * returns null when its policy allows nothing. Only the sandbox's user may connect to it.
     */
    private EgressProxy startEgress(SandboxId id, SandboxSpec spec, Path runDir, int sandboxHostUid) throws IOException {
        if (spec.network().isNone()) {
            return null;
        }
        Path socket = runDir.resolve(EGRESS_SOCKET_NAME);
        EgressProxy proxy = EgressProxy.start(id.value(), socket,
                new EgressRules(spec.network(), egress.serverAddresses().get(), egress.resolver()), egress.listener(), egress.options(),
                spec.credentials(), spec.requestApprovals(), egress.requestGate());
        try {
            runtime.grantSocket(socket, sandboxHostUid);
        } catch (IOException | RuntimeException e) {
            proxy.close();
            throw e;
        }
        return proxy;
    }

    /**
     * For a sandbox whose proxy intercepts HTTPS (it has credentials or request approvals): writes
     * the trust bundle (the host's CAs and the sandbox's own, public certificate only) into {@code
     * run/} and returns the variables that point common clients at it, and one {@code
     * AIRLOCK_CREDENTIAL_<NAME>} per credential that says where it is injected (never its value), and
     * {@code AIRLOCK_REQUEST_APPROVALS} ({@code POST,PUT@api.example.com:443;...}) naming the requests
     * that wait for a person. Empty otherwise: nothing changes for such a sandbox.
     */
    private static Map<String, String> interceptionEnvironment(SandboxSpec spec, EgressProxy proxy, Path runDir) throws IOException {
        Optional<String> ca = proxy.certificateAuthorityPem();
        if (ca.isEmpty()) {
            return Map.of();
        }
        String hostBundle = "";
        for (String candidate : HOST_CA_BUNDLES) {
            Path p = Path.of(candidate);
            if (Files.isRegularFile(p)) {
                hostBundle = Files.readString(p, StandardCharsets.ISO_8859_1);
                break;
            }
        }
        String separator = hostBundle.isEmpty() || hostBundle.endsWith("\n") ? "" : "\n";
        writePublic(runDir.resolve(CA_FILE_NAME), ca.get());
        writePublic(runDir.resolve(CA_BUNDLE_FILE_NAME), hostBundle + separator + ca.get());
        Map<String, String> env = new LinkedHashMap<>();
        String bundle = "/run/airlock/" + CA_BUNDLE_FILE_NAME;
        for (String name : List.of("SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO")) {
            env.put(name, bundle);
        }
        // Node adds these to its own built-in list rather than replacing it.
        env.put("NODE_EXTRA_CA_CERTS", "/run/airlock/" + CA_FILE_NAME);
        for (Credential c : spec.credentials()) {
            String key = "AIRLOCK_CREDENTIAL_" + c.name().toUpperCase(Locale.ROOT).replace('-', '_');
            String hosts = String.join(",", c.destinations().stream().map(d -> d.anyPort() ? d.host() : d.toString()).toList());
            env.merge(key, "injected-by-airlock-for:" + hosts, (a, b) -> a + "," + hosts);
        }
        // So that code (and the agent reading its output) knows why such a request waits, or gets a 403.
        if (!spec.requestApprovals().isEmpty()) {
            env.put("AIRLOCK_REQUEST_APPROVALS", String.join(";", spec.requestApprovals().stream()
                    .map(a -> String.join(",", new java.util.TreeSet<>(a.methods())) + "@" + String.join(",",
                            a.destinations().stream().map(d -> d.anyPort() ? d.host() : d.toString()).toList()))
                    .toList()));
        }
        return Map.copyOf(env);
    }

    private static void writePublic(Path file, String content) throws IOException {
        Files.writeString(file, content, StandardCharsets.ISO_8859_1);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    }

    private static List<String> agentCommand(dev.airlock.core.Limits limits, boolean egress) {
        List<String> command = new ArrayList<>();
        command.add(SystemImage.AGENT_DIR + "/" + AgentBinary.FILE_NAME);
        command.addAll(OciConfig.agentLimitArgs(limits));
        if (egress) {
            command.addAll(List.of("--egress-port", String.valueOf(EgressSettings.SANDBOX_PORT), "--egress-socket", "/run/airlock/" + EGRESS_SOCKET_NAME));
        }
        command.add("/run/airlock/" + SOCKET_NAME);
        return command;
    }

    private SocketChannel acceptOne(ServerSocketChannel listener, SandboxId id) throws IOException {
        listener.configureBlocking(false);
        try (Selector selector = Selector.open()) {
            listener.register(selector, SelectionKey.OP_ACCEPT);
            if (selector.select(config.startTimeout().toMillis()) == 0) {
                throw new AirlockException(AirlockException.Kind.UNAVAILABLE, "sandbox " + id + " started but its agent did not connect within "
                        + config.startTimeout().toSeconds() + "s");
            }
            SocketChannel channel = listener.accept();
            channel.configureBlocking(true);
            return channel;
        }
    }

    private static Map<String, String> agentEnvironment() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", "/usr/bin:/bin:/usr/sbin:/sbin");
        return env;
    }

    long oomKills(SandboxId id) {
        return Cgroups.oomKills(id.value());
    }

    /** Kills and removes one sandbox. The agent first, so the runtime has less to kill. */
    void destroy(OciSandbox sandbox) {
        live.remove(sandbox.id());
        sandbox.closeEgress();
        sandbox.agent().close();
        runtime.delete(sandbox.id().value());
        HostFiles.deleteTree(state.sandboxDir(sandbox.id().value()));
        uidSlots.release(sandbox.hostIdBase());
    }

    @Override
    public List<String> reapOrphans() {
        List<String> reaped = new ArrayList<>();
        List<String> dead = state.deadInstances();
        if (dead.isEmpty()) {
            return reaped;
        }
        List<String> containers = runtime.list();
        for (String instance : dead) {
            String prefix = "al-" + instance + "-";
            for (String container : containers) {
                if (container.startsWith(prefix) && runtime.delete(container)) {
                    reaped.add("container " + container);
                }
            }
            for (Path cgroup : Cgroups.find(prefix)) {
                if (Cgroups.remove(cgroup)) {
                    reaped.add("cgroup " + cgroup);
                }
            }
            for (Path slot : uidSlots.held(prefix)) {
                HostFiles.deleteTree(slot);
                reaped.add("host id range " + slot.getFileName());
            }
            state.removeInstance(instance);
            reaped.add("state of instance " + instance);
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
        try {
            for (OciSandbox sandbox : List.copyOf(live.values())) {
                try {
                    sandbox.destroy();
                } catch (RuntimeException e) {
                    LOG.warn("could not destroy sandbox {}: {}", sandbox.id(), e.getMessage());
                }
            }
        } finally {
            state.close();
        }
    }
}
