package dev.airlock.server.sandbox;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Isolation;
import dev.airlock.core.Printable;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.cluster.ClusterMembership;
import dev.airlock.server.cluster.NodeCalls;
import dev.airlock.server.command.NodeRouting;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.command.SandboxView;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.control.Admission;
import dev.airlock.server.control.ApprovalGate;
import dev.airlock.server.control.Approvals;
import dev.airlock.server.control.ClientQuotas;
import dev.airlock.server.control.ControlChain;
import dev.airlock.server.control.OperationGrant;
import dev.airlock.server.control.ProfileCeilings;
import dev.airlock.server.control.SeparationOfDuties;
import dev.airlock.server.control.ServerCapacity;
import dev.airlock.server.files.FileCommands;
import dev.airlock.server.interpreter.Interpreters;
import dev.airlock.server.live.EgressLog;
import dev.airlock.server.live.ExecutionRates;
import dev.airlock.server.live.ExecutionRecords;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.MetricsHistory;
import dev.airlock.server.live.SandboxSlots;
import dev.airlock.server.live.Sandboxes;
import dev.airlock.server.live.Tiers;
import dev.airlock.server.output.OutputStore;
import dev.airlock.server.output.ProcessOutputFiles;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.snapshot.SnapshotStore;
import dev.airlock.server.store.SandboxStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The service behind every door. A door authenticates a request, asks {@link #authorize} whether
 * its client may use the operation at all, parses its wire format into a {@link Command}, and
 * hands it to {@link #execute}: there the command is resolved (the sandbox it names, the profile
 * that bounds it), passes the {@linkplain #controls chain of controls}, and is carried out by the
 * handler of its concern. So no check can be skipped by choosing a door, and every refusal names
 * the control and rule that made it.
 */
public final class SandboxService implements CommandApi, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxService.class);
    /** How long shutdown waits for the sandboxes' destroys (each collection has its own deadline). */
    private static final Duration SHUTDOWN_WAIT = Duration.ofMinutes(2);

    private final ServerConfig config;
    private final Policy policy;
    private final Approvals approvals;
    private final Tiers tiers;
    private final EgressLog egressLog;
    private final AuditLog audit;
    private final Sandboxes sandboxes = new Sandboxes();
    private final OutputStore outputs;
    private final SnapshotStore snapshots;
    private final ServerMetrics metrics;
    private final SandboxTeardown teardown;
    private final DoorRequests requests;
    private final Admissions admissions;
    private final ControlChain controls;
    private final Lifecycle lifecycle;
    private final Executions executions;
    private final Interpreters interpreters;
    private final OneShotRuns runs;
    private final FileCommands files;
    private final EgressApprovals egressApprovals;
    private final Thread expiry;
    private final MetricsHistory history;
    private final List<String> reapedAtStart;
    private final ClusterMembership cluster;
    /** Where this node's REST door sends what another node holds or is placed on; null when it runs alone. */
    private final NodeCalls routing;
    private volatile boolean closed;

    /**
     * {@code egressLog} is where the engine's egress proxies record (see SandboxRuntime); {@code
     * cluster} is this server's membership of a cluster, null when it runs alone.
     */
    public SandboxService(ServerConfig config, Policy policy, Tiers tiers, SandboxStore store, ServerMetrics metrics, EgressLog egressLog,
                          AuditLog audit, ClusterMembership cluster) {
        this.cluster = cluster;
        this.routing = cluster == null ? null : new NodeCalls(cluster, id -> sandboxes.find(id) != null);
        this.config = config;
        this.policy = policy;
        this.tiers = tiers;
        this.egressLog = egressLog;
        this.audit = audit;
        this.metrics = metrics;
        this.approvals = new Approvals(audit, policy.approvalTimeout(), cluster == null ? null : cluster.nodeName());
        this.outputs = new OutputStore(config.dataDir().resolve("outputs"));
        this.snapshots = new SnapshotStore(config.dataDir().resolve("snapshots"), cluster == null ? null : cluster.nodeName(),
                routing);
        ProcessOutputFiles processOutputs = new ProcessOutputFiles(config.dataDir().resolve("processes"),
                tiers.primary().driver().instance(), tiers::isAlive);
        this.teardown = new SandboxTeardown(sandboxes.map(), outputs, processOutputs, audit, store, egressLog, metrics);
        OperationGrant grant = new OperationGrant(policy.source());
        this.requests = new DoorRequests(audit, sandboxes, grant, metrics);
        // Every command passes these, in this order; each is one class with one job (docs/policy.md, "Controls").
        this.controls = new ControlChain(List.of(
                grant,
                new ProfileCeilings(),
                new ClientQuotas(new SandboxSlots(config.maxSandboxes(), cluster), new ExecutionRates()),
                new ApprovalGate(approvals),
                new ServerCapacity(),
                new SeparationOfDuties(approvals)), audit);
        this.admissions = new Admissions(config, policy, sandboxes, snapshots);
        this.lifecycle = new Lifecycle(policy, tiers, sandboxes, store, teardown, snapshots, metrics, audit, () -> closed,
                cluster == null ? null : cluster.nodeName());
        this.executions = new Executions(tiers, new ExecutionRecords(audit), processOutputs, metrics);
        this.interpreters = new Interpreters(tiers, audit);
        this.runs = new OneShotRuns(this::execute, policy, config.maxTtl());
        this.files = new FileCommands(audit);
        this.reapedAtStart = lifecycle.forgetOrphans();
        this.egressApprovals = new EgressApprovals(sandboxes, approvals, policy);
        this.expiry = Thread.ofVirtual().name("airlock-expiry").start(new Expiry(sandboxes, teardown, outputs, () -> closed, lifecycle::park));
        metrics.bind(this);
        this.history = new MetricsHistory(metrics::read);
    }

    public List<String> reapedAtStart() {
        return reapedAtStart;
    }

    // --- the door's question: may this client use this operation at all? ---

    @Override
    public Caller authorize(Request r) {
        return requests.authorize(r);
    }

    @Override
    public void recordUndecided(Request r) {
        requests.recordUndecided(r);
    }

    @Override
    public void refuseUnauthenticated(String via, String iface, String endpoint, String sourceAddress, boolean tokenSent) {
        requests.refuseUnauthenticated(via, iface, endpoint, sourceAddress, tokenSent);
    }

    @Override
    public void refuseCrossSite(Client client, String via, String endpoint, String origin, String rule) {
        requests.refuseCrossSite(client, via, endpoint, origin, rule);
    }

    // --- commands ---

    /**
     * Carries out {@code command} for {@code caller}: resolves what it names, runs every control
     * on it, then its handler. The audit records made meanwhile are filed under the caller.
     */
    @Override
    public <R> R execute(Caller caller, Command<R> command) {
        Objects.requireNonNull(caller, "a command is executed for a caller");
        return Caller.call(caller, () -> {
            try (Admission a = admissions.admission(caller, command)) {
                try {
                    controls.check(a);
                } catch (dev.airlock.server.control.Refused r) {
                    metrics.refused();
                    throw r;
                }
                @SuppressWarnings("unchecked")
                R result = (R) handle(a);
                return result;
            }
        });
    }

    /** Each create of a fork passes every control on its own; all or none. */
    private List<SandboxView> fork(Caller caller, Command.Fork f) {
        List<SandboxView> made = new ArrayList<>();
        try {
            for (int i = 0; i < f.count(); i++) {
                made.add(execute(caller, f.create()));
            }
        } catch (RuntimeException e) {
            // the server's own undo: the caller was granted sandbox.create, which does not cover a destroy
            for (SandboxView m : made) {
                try {
                    execute(Caller.SERVER, new Command.Destroy(m.id()));
                } catch (RuntimeException gone) {
                    LOG.warn("sandbox {} of a refused fork could not be destroyed: {}", m.id(), gone.getMessage());
                    e.addSuppressed(gone);
                }
            }
            throw e;
        }
        return made;
    }

    private ClusterMembership cluster() {
        if (cluster == null) {
            throw new AirlockException(Kind.CONFLICT, "this server runs alone, not as a node of a cluster: start it with --cluster"
                    + " (docs/cluster.md)");
        }
        return cluster;
    }

    /** Commands that talk to an execution or interpreter already running in the sandbox, beside the engine's own checks. */
    private static boolean reachesRunningAgent(Command<?> c) {
        return c instanceof Command.Signal || c instanceof Command.Input || c instanceof Command.Attach || c instanceof Command.OpenPort || c instanceof Command.CreateContext || c instanceof Command.RestartContext
                || c instanceof Command.DeleteContext || c instanceof Command.RunCell;
    }

    /** Hands an admitted command to the handler of its concern. */
    private Object handle(Admission a) {
        ManagedSandbox s = a.sandbox();
        if (s != null && reachesRunningAgent(a.command())) {
            s.sandbox().ensureRunning(); // paused: its agent is frozen and would not answer until it resumes
        }
        return switch (a.command()) {
            case Command.Create c -> lifecycle.create(a, c);
            case Command.ListSandboxes l -> sandboxes.list(a.caller(), l);
            case Command.Describe d -> s;
            case Command.Egress e -> egressLog.of(s.id());
            case Command.ExtendTtl e -> lifecycle.extend(a, e);
            case Command.Pause p -> p.toDisk() ? lifecycle.pauseToDisk(a) : lifecycle.pause(a, true);
            case Command.TakeSnapshot t -> lifecycle.snapshot(a, t);
            case Command.ListSnapshots l -> snapshots.list(outputOwner(a.caller()));
            case Command.DescribeSnapshot d -> snapshots.get(d.snapshot(), outputOwner(a.caller()));
            case Command.Fork f -> fork(a.caller(), f);
            case Command.ReadSnapshotArchive r -> {
                try {
                    snapshots.writeArchive(snapshots.get(r.snapshot(), outputOwner(a.caller())), r.sink());
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e); // the client went away mid-answer: the door rethrows it
                }
                yield null;
            }
            case Command.DeleteSnapshot d -> {
                snapshots.delete(d.snapshot(), outputOwner(a.caller()));
                audit.record(AuditRecord.LIFECYCLE, null, Lifecycle.snapshotEvent("snapshot-deleted", d.snapshot(), null));
                yield null;
            }
            case Command.Resume r -> lifecycle.pause(a, false);
            case Command.UpdateNetwork n -> lifecycle.updateNetwork(a);
            case Command.Destroy d -> {
                lifecycle.destroy(a);
                yield null;
            }
            case Command.Exec e -> executions.exec(a, e);
            case Command.StartProcess p -> executions.start(a, p);
            case Command.Signal g -> executions.signal(a, g);
            case Command.Input i -> executions.input(a, i);
            case Command.ProcessOutput p -> s.process(p.process());
            case Command.Attach t -> executions.attach(a, t);
            case Command.OpenPort o -> {
                List<Integer> ports = s.profile().ports();
                if (!ports.contains(o.port())) {
                    throw new AirlockException(Kind.PERMISSION_DENIED, "port " + o.port() + " is not a preview port of profile '" + s.profile().name()
                            + "': " + (ports.isEmpty() ? "it names none" : "it names " + ports.stream().map(String::valueOf)
                            .collect(java.util.stream.Collectors.joining(", ")))
                            + " (a profile's 'ports' list in the policy decides which ports inside its sandboxes the owner may reach)");
                }
                yield s;
            }
            case Command.Run r -> runs.run(a.caller(), r);
            case Command.WriteFile w -> files.write(s, w);
            case Command.ReadFile r -> {
                files.read(s, r);
                yield null;
            }
            case Command.Stat st -> files.stat(s, st.path());
            case Command.ListFiles l -> files.list(s, l.path());
            case Command.Mkdir m -> files.mkdir(s, m);
            case Command.Remove r -> {
                files.remove(s, r);
                yield null;
            }
            case Command.Rename r -> files.rename(s, r);
            case Command.ListOutputs l -> outputs.list(outputOwner(a.caller()));
            case Command.DescribeOutputs d -> outputs.get(d.outputsOf(), outputOwner(a.caller()));
            case Command.ReadOutput r -> {
                try {
                    outputs.read(r.outputsOf(), outputOwner(a.caller()), r.path(), r.sink());
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e); // the client went away mid-answer: the door rethrows it
                }
                yield null;
            }
            case Command.DeleteOutputs d -> {
                outputs.delete(d.outputsOf(), outputOwner(a.caller()));
                audit.record(AuditRecord.LIFECYCLE, d.outputsOf(), AuditRecord.lifecycle("outputs-deleted", null));
                yield null;
            }
            case Command.ListApprovals l -> approvals.pending();
            case Command.DescribeApproval d -> approvals.get(d.approval());
            case Command.Decide d -> approvals.decide(d.approval(), d.approve(), d.by(), d.reason() == null ? null : Printable.of(d.reason()));
            case Command.Metrics m -> metrics.scrape();
            case Command.MetricsHistory m -> history.series();
            case Command.ListNodes l -> cluster().nodes();
            case Command.DrainNode d -> cluster().drain(d.node(), d.draining());
            case Command.ReadAudit r -> {
                try (var reader = auditReader()) {
                    yield reader.query(new dev.airlock.server.audit.AuditReader.Query(r.ofSandbox(), r.kind(), r.since(), r.limit(), r.client(), r.until(),
                            r.before(), r.text()));
                }
            }
            case Command.VerifyAudit v -> {
                try (var reader = auditReader()) {
                    yield reader.verify();
                }
            }
            case Command.ListImages l -> tiers.primary().driver().images();
            case Command.CreateContext c -> interpreters.create(a);
            case Command.ListContexts l -> interpreters.list(s);
            case Command.RestartContext r -> interpreters.restart(a, r);
            case Command.DeleteContext d -> {
                interpreters.delete(a, d);
                yield null;
            }
            case Command.RunCell r -> interpreters.run(a, r);
        };
    }

    /** A reader of the audit log, once what was recorded so far is written. */
    private dev.airlock.server.audit.AuditReader auditReader() {
        try {
            audit.flush(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while the audit log was written");
        }
        return dev.airlock.server.audit.AuditReader.open(config.database());
    }

    /** Whose outputs a caller sees: a client its own, the server all. */
    private static String outputOwner(Caller c) {
        return c.isServer() ? null : c.client().name();
    }

    /** Runs {@code listener} whenever an approval is requested or decided; it must return at once. */
    @Override
    public void onApprovalsChanged(Runnable listener) {
        approvals.onChange(listener);
    }

    /** The policy this service enforces. */
    @Override
    public Policy policy() {
        return policy;
    }

    /** The audit log every door and this service write to. */
    public AuditLog audit() {
        return audit;
    }

    /** The engines, one per isolation tier this server runs. */
    public Tiers tiers() {
        return tiers;
    }

    @Override
    public void recordLifecycle(String sandbox, Map<String, Object> detail) {
        audit.record(AuditRecord.LIFECYCLE, sandbox, detail);
    }

    @Override
    public Command.HeldSnapshot exportSnapshot(String id, String client) {
        return snapshots.export(id, client);
    }

    @Override
    public void exportSnapshotBlob(String id, String client, String digest, java.io.OutputStream out) throws java.io.IOException {
        snapshots.exportBlob(id, client, digest, out);
    }

    @Override
    public Isolation isolation(Profile profile) {
        return tiers.forProfile(profile).driver().isolation();
    }

    @Override
    public NodeRouting routing() {
        return routing;
    }

    @Override
    public ClusterHealth clusterHealth() {
        return cluster == null ? null : new ClusterHealth(cluster.nodeName(), cluster.databaseAnswers());
    }

    /** Sandboxes held, counting those being destroyed. */
    @Override
    public int size() {
        return sandboxes.size();
    }

    /**
     * Asks a person whether the egress proxy may forward a request a profile's
     * {@code approveRequests} rule covers ({@link EgressApprovals}).
     */
    public boolean approveRequest(String sandboxId, String method, String host, int port, String target) {
        return egressApprovals.approve(sandboxId, method, host, port, target);
    }

    /** Whether sandbox {@code id} is live (not destroyed, whoever owns it): what ends its preview links. */
    @Override
    public boolean live(String id) {
        ManagedSandbox s = sandboxes.find(id);
        return s != null && !s.destroying();
    }

    /** Destroys every sandbox, in parallel, and waits for them; the engine and store are closed by their owner. */
    @Override
    public void close() {
        closed = true;
        expiry.interrupt();
        history.close();
        for (ManagedSandbox s : sandboxes.values()) {
            teardown.destroyInBackground(s, "destroyed", "destroyed at shutdown");
        }
        if (!teardown.awaitAll(SHUTDOWN_WAIT)) {
            LOG.warn("some sandboxes were still being destroyed {} s after shutdown began; the engine closes them", SHUTDOWN_WAIT.toSeconds());
        }
    }
}
