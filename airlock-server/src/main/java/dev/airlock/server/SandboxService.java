package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressRecord;
import dev.airlock.server.audit.Audit;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Approvals;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;

/**
 * The service behind every interface: creates and holds sandboxes, runs executions, moves files,
 * and destroys sandboxes when their time-to-live or idle timeout runs out. Interfaces (REST, later
 * MCP) only translate requests into these calls, so no check can be skipped by choosing a door.
 */
public final class SandboxService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxService.class);
    /** How long shutdown waits for the sandboxes' destroys (each collection has its own deadline). */
    private static final Duration SHUTDOWN_WAIT = Duration.ofMinutes(2);
    /** Egress requests of one sandbox that may wait for approval at once. */
    private static final int MAX_PENDING_REQUESTS = 4;

    /**
     * A create request as a client asked for it; the service fills in and bounds it from the
     * profile.
     *
     * @param profile  the profile to create with; null: the client's first
     * @param image    null: the profile's
     * @param limits   the client's changes, applied to the profile's default limits
     * @param network  null: the profile's network
     * @param ttl      null: the server's default, within the profile's maximum lifetime
     * @param idleTimeout null: the server's default
     */
    public record CreateRequest(String profile, String image, UnaryOperator<Limits> limits, Map<String, String> env,
                                NetworkPolicy network, Map<String, String> labels, Duration ttl, Duration idleTimeout,
                                Language defaultLanguage) {

        public CreateRequest {
            limits = limits == null ? UnaryOperator.identity() : limits;
            env = env == null ? Map.of() : env;
            labels = labels == null ? Map.of() : labels;
            if (labels != null) {
                for (String key : labels.keySet()) {
                    if (key.isBlank() || key.indexOf('=') >= 0) {
                        // the list filter is key=value: such a key could never be matched
                        throw AirlockException.invalid("label key '" + Json.printable(key)
                                + "' must be non-blank and contain no '=' (labels are filtered as key=value)");
                    }
                }
            }
        }
    }

    private final ServerConfig config;
    private final Policy policy;
    private final Approvals approvals;
    private final ExecutionRates rates = new ExecutionRates();
    private final Engine engine;
    private final SandboxStore store;
    private final ServerMetrics metrics;
    private final EgressLog egressLog;
    private final AuditLog audit;
    private final Map<String, ManagedSandbox> sandboxes = new ConcurrentHashMap<>();
    private final OutputStore outputs;
    private final ProcessOutputFiles processOutputs;
    private final SandboxTeardown teardown;
    private final ExecutionRecords records;
    /** Sandbox slots against --max-sandboxes and each client's quota, held from before a create until the sandbox is gone. */
    private final SandboxSlots slots;
    private final Thread expiry;
    private final List<String> reapedAtStart;
    private volatile boolean closed;

    /** {@code egressLog} is where the engine's egress proxies record (see {@link SandboxRuntime}). */
    SandboxService(ServerConfig config, Policy policy, Engine engine, SandboxStore store, ServerMetrics metrics, EgressLog egressLog,
                   AuditLog audit) {
        this.policy = policy;
        this.approvals = new Approvals(audit, policy.approvalTimeout());
        this.outputs = new OutputStore(config.dataDir().resolve("outputs"));
        this.processOutputs = new ProcessOutputFiles(config.dataDir().resolve("processes"), engine.driver().instance(),
                engine.driver()::isAlive);
        this.egressLog = egressLog;
        this.audit = audit;
        this.config = config;
        this.slots = new SandboxSlots(config.maxSandboxes());
        this.engine = engine;
        this.store = store;
        this.metrics = metrics;
        this.records = new ExecutionRecords(audit);
        this.teardown = new SandboxTeardown(sandboxes, outputs, processOutputs, audit, store, egressLog, metrics);
        this.reapedAtStart = forgetOrphans();
        this.expiry = Thread.ofVirtual().name("airlock-expiry").start(this::expireLoop);
        metrics.bind(this);
    }

    /**
     * Rows that earlier, dead servers left: their containers were reaped when the engine started;
     * what remains is to say so and forget them.
     */
    private List<String> forgetOrphans() {
        List<String> reaped = new java.util.ArrayList<>(engine.reapedAtStart());
        for (SandboxStore.Row row : store.leftBy(engine.driver().instance())) {
            if (!engine.driver().isAlive(row.instance())) {
                store.delete(row.id());
                audit.record(AuditRecord.LIFECYCLE, Audit.SERVER, row.id(), lifecycle("reaped",
                        "created " + row.createdAt() + " by a server that is gone"));
                reaped.add("sandbox " + row.id() + " (created " + row.createdAt() + " by a server that is gone)");
                LOG.warn("reaped orphaned sandbox {} created {} by a server that is no longer running", row.id(), row.createdAt());
            }
        }
        return List.copyOf(reaped);
    }

    public List<String> reapedAtStart() {
        return reapedAtStart;
    }

    // --- authorization ---

    /** What an interface knows of a request when it asks whether it may go on. */
    public record Request(Client client, String via, String iface, String endpoint, Operation operation, String sandbox,
                          String argsDigest, Caller.Asker asker) {
    }

    /**
     * Decides whether {@code r.client()} may call {@code r.operation()}, records the request and
     * the decision, and returns the caller the request's service calls must run as
     * ({@link Caller#call}). Throws PERMISSION_DENIED naming the rule when the policy does not
     * grant it.
     */
    public Caller authorize(Request r) {
        Caller caller = new Caller(r.client(), r.via(), r.operation(), r.asker());
        String sandbox = recordRequest(r, caller);
        boolean allowed = r.client().may(r.operation());
        String rule = allowed ? r.client().rule("allow") + " grants " + r.operation().id() : r.client().rule("allow");
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("interface", r.iface());
        a.put("operation", r.operation().id());
        a.put("decision", allowed ? "allow" : "deny");
        a.put("rule", rule);
        audit.record(AuditRecord.AUTHORIZATION, caller.actor(), sandbox, a);
        if (!allowed) {
            throw new AirlockException(Kind.PERMISSION_DENIED, "client '" + r.client().name() + "' may not call " + r.operation().id()
                    + " (rule " + rule + " in " + policy.source() + "): ask the operator to grant it");
        }
        return caller;
    }

    /**
     * Records a request of an authenticated client that never reached an operation (no such
     * endpoint, a method not allowed, a body that could not be read): so every request is on the
     * log, not only those that were decided.
     */
    public void recordUndecided(Request r) {
        recordRequest(r, new Caller(r.client(), r.via(), null, null));
    }

    private String recordRequest(Request r, Caller caller) {
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("interface", r.iface());
        q.put("endpoint", r.endpoint());
        q.put("operation", r.operation() == null ? null : r.operation().id());
        q.put("argsDigest", r.argsDigest());
        // a sandbox the client cannot see is not filed under its id
        String sandbox = r.sandbox() != null && visible(caller, sandboxes.get(r.sandbox())) ? r.sandbox() : null;
        audit.record(AuditRecord.REQUEST, caller.actor(), sandbox, q);
        return sandbox;
    }

    /**
     * Records a request no client could be found for (a missing or wrong token). Anyone who can
     * reach the port can repeat it at will, so it is folded per source (interface, address and
     * whether a token was sent) and window: the first of a window is recorded as a request and a
     * deny, the rest counted into one deny record when the window closes (docs/audit.md).
     */
    public void refuseUnauthenticated(String via, String iface, String endpoint, String sourceAddress, boolean tokenSent) {
        String reason = tokenSent ? "wrong" : "missing";
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("interface", iface);
        q.put("endpoint", endpoint);
        q.put("source", sourceAddress);
        String source = iface + " " + sourceAddress + " " + reason;
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("interface", iface);
        a.put("decision", "deny");
        a.put("rule", "token");
        a.put("token", reason);
        a.put("source", sourceAddress);
        if (audit.admitRefusal(source, AuditRecord.AUTHORIZATION, via, null, a, endpoint)) {
            audit.record(AuditRecord.REQUEST, via, null, q);
            audit.record(AuditRecord.AUTHORIZATION, via, null, a);
        }
    }

    /** The policy this service enforces. */
    public Policy policy() {
        return policy;
    }

    /** The approvals waiting for a person, oldest first. */
    public List<Approval> pendingApprovals() {
        require(Operation.APPROVALS);
        return approvals.pending();
    }

    public Approval approval(String id) {
        require(Operation.APPROVALS);
        return approvals.get(id);
    }

    /** Approves or denies a pending approval; {@code by} is recorded as who decided. */
    public Approval decide(String id, boolean approve, String by, String reason) {
        Caller c = require(Operation.APPROVALS);
        Approval a = approvals.get(id);
        if (!c.isServer() && c.client().name().equals(a.client())) {
            throw refuse(Kind.PERMISSION_DENIED, "approvals", "approval " + id + " was asked for by client '" + a.client()
                    + "' itself: another client must decide it (separation of duties); give an operator its own token with 'approvals'");
        }
        return approvals.decide(id, approve, by, reason == null ? null : Json.printable(reason));
    }

    /**
     * The caller of this thread, if the operation it was granted covers this service call. No
     * caller at all is an interface that skipped {@link #authorize}: refused, never assumed.
     */
    private static Caller require(Operation... covering) {
        Caller c = Caller.current();
        if (c == null) {
            throw new AirlockException(Kind.INTERNAL, "a service call arrived without an authorized caller: refused");
        }
        if (c.isServer()) {
            return c;
        }
        for (Operation o : covering) {
            if (c.operation() == o) {
                return c;
            }
        }
        throw new AirlockException(Kind.PERMISSION_DENIED, "operation " + c.operation().id() + " does not cover this call");
    }

    /**
     * A refusal by the policy after the operation itself was granted (a profile, a limit, a
     * quota...): recorded as a deny naming the rule, and returned for the caller to throw.
     */
    private AirlockException refuse(Kind kind, String rule, String message) {
        Caller c = Caller.current();
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("operation", c == null || c.operation() == null ? null : c.operation().id());
        a.put("decision", "deny");
        a.put("rule", rule);
        a.put("refusal", kind.name().toLowerCase(java.util.Locale.ROOT));
        audit.record(AuditRecord.AUTHORIZATION, null, a);
        return new AirlockException(kind, message);
    }

    private static boolean visible(Caller c, ManagedSandbox s) {
        return s != null && (c.isServer() || s.owner().equals(c.client().name()));
    }

    private void awaitApproval(Caller c, Profile p, Approval.Trigger trigger, String sandbox, String summary) {
        if (p.approvals().contains(trigger)) {
            approvals.await(c, trigger, p.rule("approvals") + " (" + trigger.id() + ")", sandbox, summary);
        }
    }

    // --- sandboxes ---

    public ManagedSandbox create(CreateRequest request) {
        Caller c = require(Operation.SANDBOX_CREATE, Operation.RUN);
        Client client = c.client();
        if (client == null) {
            throw new AirlockException(Kind.INTERNAL, "the server does not create sandboxes on its own");
        }
        Profile p = profileFor(client, request.profile());
        if (request.image() != null && !request.image().equals(p.image())) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("image"), "image '" + Json.printable(request.image()) + "' is not profile '" + p.name()
                    + "''s image '" + p.image() + "' (rule " + p.rule("image") + ")");
        }
        Limits limits = request.limits().apply(p.limits());
        List<String> over = p.exceeding(limits);
        if (!over.isEmpty()) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLimits"), "limits above what profile '" + p.name() + "' allows: " + String.join(", ", over)
                    + " (rule " + p.rule("maxLimits") + "): ask for less, or use a profile with more");
        }
        Duration ttl = request.ttl() == null ? min(config.defaultTtl(), p.maxLifetime()) : request.ttl();
        if (ttl.compareTo(p.maxLifetime()) > 0) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLifetimeSeconds"), "a lifetime of " + ttl.toSeconds() + " s is above profile '" + p.name() + "''s "
                    + p.maxLifetime().toSeconds() + " s (rule " + p.rule("maxLifetimeSeconds") + ")");
        }
        Duration idle = request.idleTimeout() == null ? config.defaultIdle() : request.idleTimeout();
        if (request.defaultLanguage() != null) {
            requireLanguage(p, request.defaultLanguage());
        }
        NetworkPolicy network = p.network();
        if (request.network() != null) {
            network = p.keepingDeny(request.network());
            List<String> beyond = p.beyondNetwork(network);
            if (!beyond.isEmpty()) {
                beyondNetwork(c, p, null, beyond);
            }
        }
        SandboxSlots.Slot slot = reserveSlot(client);
        boolean created = false;
        try {
            ManagedSandbox managed = createApproved(c, client, p, request, limits, ttl, idle, network, slot);
            created = true;
            return managed;
        } finally {
            if (!created) {
                slot.release();
            }
        }
    }

    private ManagedSandbox createApproved(Caller c, Client client, Profile p, CreateRequest request, Limits limits, Duration ttl,
                                          Duration idle, NetworkPolicy network, SandboxSlots.Slot slot) {
        awaitApproval(c, p, Approval.Trigger.CREATE, null, "create a sandbox with profile '" + p.name() + "' for client '"
                + client.name() + "' (limits: memory " + Limits.formatBytes(limits.memoryBytes()) + ", cpus " + limits.cpus() + ", pids "
                + limits.pids() + ", timeout " + limits.timeout().toSeconds() + " s; network: " + describe(network) + ")");
        if (slot.takeServerSlot() instanceof SandboxSlots.ServerFull full) {
            throw refuse(Kind.LIMIT_EXCEEDED, "--max-sandboxes", "this server already holds " + full.held() + " sandboxes (counting those"
                    + " being created or destroyed), its limit of " + full.max() + " (--max-sandboxes): destroy some, or raise --max-sandboxes");
        }
        List<dev.airlock.core.Credential> credentials = p.credentials().stream().map(name -> policy.secrets().get(name).resolve()).toList();
        SandboxSpec spec = new SandboxSpec(p.image(), limits, request.env(), network, p.inputs(), credentials, p.requestApprovals());
        Sandbox sandbox = engine.create(spec);
        ManagedSandbox managed = new ManagedSandbox(sandbox, client.name(), p, request.labels(), Instant.now(), ttl, idle,
                request.defaultLanguage());
        managed.holdSlot(slot);
        try {
            if (p.outputBytes() > 0) {
                // ready for the code to write into, so that outputs need no set-up
                sandbox.files().mkdir(OutputStore.DIR, true);
            }
            store.insert(new SandboxStore.Row(managed.id(), engine.driver().instance(), managed.createdAt(), Json.specJson(spec)));
        } catch (IOException | RuntimeException e) {
            sandbox.close();
            throw e instanceof RuntimeException re ? re : new AirlockException(Kind.UNAVAILABLE, "sandbox " + managed.id()
                    + " did not answer after it started: " + e.getMessage(), e);
        }
        sandboxes.put(managed.id(), managed);
        if (closed) {
            // close() began after the check above and may not have seen this sandbox
            teardown.destroy(managed, "destroyed", "destroyed at shutdown");
            throw AirlockException.unavailable("the server is shutting down: sandbox " + managed.id() + " was destroyed at once");
        }
        metrics.sandboxCreated();
        Map<String, Object> d = lifecycle("created", null);
        d.put("client", client.name());
        d.put("profile", p.name());
        d.put("limits", ExecutionRecords.limits(limits));
        d.put("network", describe(network));
        d.put("inputs", p.inputs().stream().map(dev.airlock.core.Input::name).toList());
        d.put("credentials", p.credentials());
        d.put("ttlSeconds", ttl.toSeconds());
        d.put("idleTimeoutSeconds", idle.toSeconds());
        d.put("labels", request.labels().size());
        audit.record(AuditRecord.LIFECYCLE, managed.id(), d);
        return managed;
    }

    private static String describe(NetworkPolicy n) {
        return n.isNone() ? "none" : n.allow().size() + " destinations, " + n.ranges().size() + " ranges";
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private Profile profileFor(Client client, String name) {
        String chosen = name == null ? client.profiles().getFirst() : name;
        if (!client.profiles().contains(chosen)) {
            throw refuse(Kind.PERMISSION_DENIED, client.rule("profiles"), "client '" + client.name() + "' may not use profile '" + Json.printable(chosen)
                    + "' (rule " + client.rule("profiles") + "): it may use " + String.join(", ", client.profiles()));
        }
        return policy.profile(chosen);
    }

    private void requireLanguage(Profile p, Language language) {
        if (!p.languages().contains(language)) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("languages"), "language " + language.id() + " is not allowed by profile '" + p.name()
                    + "' (rule " + p.rule("languages") + "): it allows " + p.languages().stream().map(Language::id).sorted().toList());
        }
    }

    /** Network beyond the profile's: waits for approval if the profile says so, else refused. */
    private void beyondNetwork(Caller c, Profile p, String sandbox, List<String> beyond) {
        if (!p.approvals().contains(Approval.Trigger.NETWORK)) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("network"), (p.network().isNone() ? "profile '" + p.name() + "' has no network, and"
                    + " this asks for " : "network beyond what profile '" + p.name() + "' allows: ")
                    + String.join("; ", beyond) + " (rule " + p.rule("network") + "): " + (p.network().isNone()
                    ? "create the sandbox with a profile that has network (see docs/policy.md)" : "ask only for what the profile names"));
        }
        awaitApproval(c, p, Approval.Trigger.NETWORK, sandbox, "let client '" + c.client().name() + "' reach, beyond profile '"
                + p.name() + "': " + String.join("; ", beyond));
    }

    /**
     * Takes one of the client's sandbox slots for a create, so that concurrent creates cannot
     * together pass its quota; the sandbox holds it until it is gone.
     */
    private SandboxSlots.Slot reserveSlot(Client client) {
        return switch (slots.reserveForClient(client)) {
            case SandboxSlots.Reserved r -> r.slot();
            case SandboxSlots.ClientQuotaReached q -> throw refuse(Kind.LIMIT_EXCEEDED, client.rule("quotas.sandboxes"), "client '"
                    + client.name() + "' already holds " + q.held() + " sandboxes (counting those being created or destroyed), its quota (rule "
                    + client.rule("quotas.sandboxes") + "): destroy some first");
            case SandboxSlots.ServerFull f -> throw new IllegalStateException("a client slot never reports the server full");
        };
    }

    /** A sandbox the caller may see; another client's is NOT_FOUND, as if it did not exist. */
    public ManagedSandbox get(String id) {
        Caller c = require(Operation.values());
        ManagedSandbox s = sandboxes.get(id);
        if (!visible(c, s) || s.destroying()) {
            throw notFound(id);
        }
        s.touch();
        return s;
    }

    private static AirlockException notFound(String id) {
        return new AirlockException(Kind.NOT_FOUND, "sandbox " + Json.printable(id)
                + " does not exist (it may have expired or been destroyed): list sandboxes with GET /v1/sandboxes (MCP: sandbox_list)");
    }

    public List<ManagedSandbox> list(Map<String, String> labelFilter) {
        Caller c = require(Operation.SANDBOX_READ);
        return sandboxes.values().stream().filter(s -> visible(c, s) && !s.destroying() && s.matches(labelFilter))
                .sorted((a, b) -> a.createdAt().compareTo(b.createdAt())).toList();
    }

    public int size() {
        return sandboxes.size();
    }

    public ManagedSandbox extendTtl(String id, Duration ttl) {
        require(Operation.SANDBOX_EXTEND);
        ManagedSandbox s = get(id);
        Profile p = s.profile();
        Duration lifetime = Duration.between(s.createdAt(), Instant.now().plus(ttl));
        if (lifetime.compareTo(p.maxLifetime()) > 0) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLifetimeSeconds"), "sandbox " + id + " would live " + lifetime.toSeconds() + " s in all, above profile '"
                    + p.name() + "''s " + p.maxLifetime().toSeconds() + " s (rule " + p.rule("maxLifetimeSeconds") + ")");
        }
        s.extend(ttl);
        return s;
    }

    public void destroy(String id) {
        require(Operation.SANDBOX_DESTROY, Operation.RUN);
        ManagedSandbox s = get(id);
        if (!teardown.destroy(s, "destroyed", "destroyed on request")) {
            throw notFound(id); // expiry (or another request) got to it first
        }
    }

    /**
     * Replaces the sandbox's network policy; its open connections that the new policy denies are
     * closed. A sandbox created without network cannot be given some later (CONFLICT).
     */
    public ManagedSandbox updateNetwork(String id, NetworkPolicy policy) {
        Caller c = require(Operation.NETWORK_UPDATE);
        ManagedSandbox s = get(id);
        NetworkPolicy narrowed = s.profile().keepingDeny(policy);
        List<String> beyond = s.profile().beyondNetwork(narrowed);
        if (!beyond.isEmpty()) {
            beyondNetwork(c, s.profile(), id, beyond);
        }
        s.sandbox().updateNetworkPolicy(narrowed);
        Map<String, Object> d = lifecycle("network-updated", null);
        d.put("network", policy.allow().size() + " destinations, " + policy.ranges().size() + " ranges");
        audit.record(AuditRecord.LIFECYCLE, s.id(), d);
        LOG.info("sandbox {}: network policy replaced ({} allowed destinations, {} ranges)", s.id(), policy.allow().size(), policy.ranges().size());
        return s;
    }

    /** The sandbox's recent egress records, oldest first (at most {@link EgressLog#PER_SANDBOX}). */
    public List<EgressRecord> egress(String id) {
        require(Operation.SANDBOX_READ);
        ManagedSandbox s = get(id);
        return egressLog.of(s.id());
    }

    /** Runs to the end; output also goes to {@code listener} as it is produced. */
    public ExecResult exec(String id, ExecRequest request, OutputListener listener) {
        ManagedSandbox s = startable(id, request);
        s.executionStarted();
        records.started(s, request, null);
        try {
            ExecResult r = s.sandbox().exec(request, listener);
            metrics.execEnded(r);
            records.ended(s, r, null, -1, -1);
            return r;
        } catch (RuntimeException e) {
            records.failed(s, null, e);
            throw e;
        } finally {
            s.executionEnded();
        }
    }

    /** How a streaming interface runs an execution: it starts it with its own listener and returns the result. */
    @FunctionalInterface
    public interface StreamedRun {
        ExecResult run(java.util.function.Function<OutputListener, Execution> start) throws IOException;
    }

    /** Runs an execution whose output an interface streams itself (REST NDJSON), recorded like {@link #exec}. */
    public ExecResult execStreamed(String id, ExecRequest request, StreamedRun run) throws IOException {
        ManagedSandbox s = startable(id, request);
        s.executionStarted();
        records.started(s, request, null);
        try {
            ExecResult r = run.run(listener -> s.sandbox().start(request, listener));
            metrics.execEnded(r);
            records.ended(s, r, null, -1, -1);
            return r;
        } catch (IOException | RuntimeException e) {
            records.failed(s, null, e);
            throw e;
        } finally {
            s.executionEnded();
        }
    }

    /**
     * The sandbox an execution may start in: the caller's, within the profile's timeout, within
     * the client's rate, and approved if the profile wants each execution approved.
     */
    private ManagedSandbox startable(String id, ExecRequest request) {
        Caller c = require(Operation.EXEC, Operation.RUN);
        ManagedSandbox s = get(id);
        Profile p = s.profile();
        if (request.timeout() != null && request.timeout().compareTo(p.maxLimits().timeout()) > 0) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLimits.timeoutSeconds"), "a timeout of " + request.timeout().toSeconds() + " s is above profile '" + p.name()
                    + "''s " + p.maxLimits().timeout().toSeconds() + " s (rule " + p.rule("maxLimits.timeoutSeconds") + ")");
        }
        if (c.client() != null) {
            try {
                rates.acquire(c.client());
            } catch (AirlockException e) {
                throw refuse(e.kind(), c.client().rule("quotas.executionsPerMinute"), e.getMessage());
            }
        }
        awaitApproval(c, p, Approval.Trigger.EXEC, id, "run in sandbox " + id + ": " + shown(request.argv()));
        return s;
    }

    /** A command as a person approving it reads it: arguments quoted, cut at 500 characters. */
    private static String shown(List<String> argv) {
        String text = String.join(" ", argv.stream().map(a -> a.matches("[A-Za-z0-9_./=:-]+") ? a : "'" + a.replace("'", "'\\''") + "'").toList());
        return Json.printable(text, 500);
    }

    private static Map<String, Object> lifecycle(String event, String reason) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("event", event);
        d.put("reason", reason);
        return d;
    }

    /** The audit log every interface and this service write to. */
    public AuditLog audit() {
        return audit;
    }

    /** Writes {@code code} into the sandbox and returns the request that runs it. */
    /**
     * The request that runs {@code source} in sandbox {@code id}: a command as given, code with the
     * sandbox's interpreter for its language (or the sandbox's default language).
     */
    public ExecRequest execRequest(String id, ExecSource source) {
        return switch (source) {
            case ExecSource.Command c -> new ExecRequest(c.argv(), Map.of(), null, null, null);
            case ExecSource.Code c -> {
                Language language = c.language() != null ? c.language() : get(id).defaultLanguage();
                if (language == null) {
                    throw AirlockException.invalid(ExecSource.missingLanguage());
                }
                yield codeRequest(id, language, c.code());
            }
        };
    }

    public ExecRequest codeRequest(String id, Language language, String code) {
        require(Operation.EXEC, Operation.RUN);
        ManagedSandbox s = get(id);
        requireLanguage(s.profile(), language);
        engine.driver().check(s.sandbox().spec(), List.of(language.interpreter()));
        return s.sandbox().codeRequest(language, code);
    }

    /**
     * Starts a process that runs on without a request waiting for it; its output goes to files in
     * the data directory ({@link ProcessOutputFiles}), and the sandbox keeps a bounded list of
     * such processes ({@link BackgroundProcesses}).
     */
    public BackgroundProcess startBackground(String id, ExecRequest request) {
        ManagedSandbox s = startable(id, request);
        BackgroundProcesses processes = s.backgroundProcesses();
        String processId = processes.reserve();
        SpilledOutput output;
        Execution execution;
        try {
            output = processes.spill(processOutputs, processId);
        } catch (RuntimeException e) {
            processes.release();
            throw e;
        }
        s.executionStarted();
        records.started(s, request, processId);
        try {
            execution = s.sandbox().startStreaming(request, output);
        } catch (RuntimeException e) {
            processes.release();
            output.close();
            processOutputs.delete(output);
            s.executionEnded();
            records.failed(s, processId, e);
            throw e;
        }
        BackgroundProcess p = new BackgroundProcess(processId, request.argv(), Instant.now(), execution, output);
        processes.add(p).forEach(evicted -> processOutputs.delete(evicted.output()));
        Caller caller = Caller.current();
        // the result is recorded under the caller who started the process, bound again on its own thread
        Thread.ofVirtual().name("airlock-background-" + p.id()).start(() -> Caller.run(caller, () -> {
            try {
                ExecResult r = execution.await();
                metrics.execEnded(r);
                records.ended(s, r, processId, output.stdoutBytes(), output.stderrBytes());
            } catch (RuntimeException e) {
                records.failed(s, processId, e);
                throw e;
            } finally {
                output.close();
                s.executionEnded();
                if (!s.sandbox().isOpen()) {
                    // destroyed while this process ran: its files may have been made after the sandbox's went
                    processOutputs.deleteSandbox(s.id());
                }
            }
        }));
        return p;
    }

    /**
     * Sends {@code signal} to a background process's whole process group, and records who sent
     * which signal to which process (a kill is an action like any other: it is on the log).
     */
    public BackgroundProcess signal(String id, String processId, int signal) {
        require(Operation.EXEC);
        ManagedSandbox s = get(id);
        BackgroundProcess p = s.process(processId);
        p.execution().signal(signal);
        records.signalled(s, p.id(), signal);
        return p;
    }

    // --- files: every path is resolved by the agent, inside the sandbox ---

    public FileInfo writeFile(String id, String path, InputStream content) {
        require(Operation.FILES_WRITE, Operation.RUN);
        ManagedSandbox s = get(id);
        long max = s.sandbox().spec().limits().fileSizeBytes();
        return files(s, "write", path, agent -> {
            agent.writeFile(path, content, max, 0644);
            return agent.stat(path);
        });
    }

    public void readFile(String id, String path, OutputStream sink) {
        require(Operation.FILES_READ, Operation.RUN);
        ManagedSandbox s = get(id);
        long max = s.sandbox().spec().limits().fileSizeBytes();
        CountingOutputStream counted = new CountingOutputStream(sink);
        files(s, "read", path, agent -> {
            agent.readFile(path, max, counted);
            return counted;
        });
    }

    public FileInfo stat(String id, String path) {
        require(Operation.FILES_READ, Operation.FILES_WRITE, Operation.RUN);
        return files(get(id), "stat", path, agent -> agent.stat(path));
    }

    public List<FileInfo> list(String id, String path) {
        require(Operation.FILES_READ, Operation.RUN);
        return files(get(id), "list", path, agent -> agent.list(path));
    }

    public FileInfo mkdir(String id, String path, boolean parents) {
        require(Operation.FILES_WRITE, Operation.RUN);
        return files(get(id), "mkdir", path, agent -> {
            agent.mkdir(path, parents);
            return agent.stat(path);
        });
    }

    public void remove(String id, String path, boolean recursive) {
        require(Operation.FILES_WRITE);
        files(get(id), "remove", path, agent -> {
            agent.remove(path, recursive);
            return null;
        });
    }

    public FileInfo rename(String id, String from, String to) {
        require(Operation.FILES_WRITE);
        ManagedSandbox s = get(id);
        requireAbsolute(to);
        return files(s, "rename", from, agent -> {
            agent.rename(from, to);
            return agent.stat(to);
        });
    }

    @FunctionalInterface
    private interface FileOperation<T> {
        T apply(SandboxAgent agent) throws IOException;
    }

    private static void requireAbsolute(String path) {
        if (path == null || !path.startsWith("/")) {
            throw AirlockException.invalid("path '" + Json.printable(path) + "' must be an absolute path inside the sandbox, such as /workspace/data.csv");
        }
    }

    private <T> T files(ManagedSandbox s, String operation, String path, FileOperation<T> op) {
        requireAbsolute(path);
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("operation", operation);
        d.put("pathDigest", Audit.digest(path));
        try {
            T result = mapFileErrors(s, path, op);
            if (result instanceof FileInfo f && operation.equals("write")) {
                d.put("bytes", f.size());
            } else if (result instanceof CountingOutputStream c) {
                d.put("bytes", c.count);
            } else if (result instanceof List<?> l) {
                d.put("entries", l.size());
            }
            d.put("outcome", "ok");
            audit.record(AuditRecord.FILE, s.id(), d);
            return result instanceof CountingOutputStream ? null : result;
        } catch (RuntimeException e) {
            d.put("outcome", "error");
            d.put("error", e instanceof AirlockException ae ? ae.kind().name().toLowerCase(java.util.Locale.ROOT) : e.getClass().getSimpleName());
            audit.record(AuditRecord.FILE, s.id(), d);
            throw e;
        }
    }

    private <T> T mapFileErrors(ManagedSandbox s, String path, FileOperation<T> op) {
        try {
            return op.apply(s.sandbox().files());
        } catch (SandboxAgent.FileTooLargeException e) {
            throw new AirlockException(Kind.TOO_LARGE, e.getMessage() + ": the sandbox's file size limit is "
                    + dev.airlock.core.Limits.formatBytes(s.sandbox().spec().limits().fileSizeBytes()));
        } catch (SandboxAgent.FileOperationException e) {
            Kind kind = switch (e.errno()) {
                case "ENOENT" -> Kind.NOT_FOUND;
                case "EEXIST", "ENOTEMPTY" -> Kind.CONFLICT;
                case "EFBIG" -> Kind.TOO_LARGE;
                default -> Kind.INVALID_ARGUMENT;
            };
            throw new AirlockException(kind, e.getMessage());
        } catch (IOException e) {
            if (!s.sandbox().isOpen()) {
                throw new AirlockException(Kind.CONFLICT, "sandbox " + s.id() + " was destroyed during the file operation");
            }
            throw new AirlockException(Kind.INTERNAL, "file operation on " + Json.printable(path) + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Asks a person whether the egress proxy may forward a request a profile's
     * {@code approveRequests} rule covers; the question is asked on behalf of the sandbox's owner.
     * False when denied, unanswered in time, or the sandbox is gone.
     */
    public boolean approveRequest(String sandboxId, String method, String host, int port, String target) {
        ManagedSandbox s = sandboxes.get(sandboxId);
        if (s == null) {
            return false;
        }
        long waiting = approvals.pending().stream().filter(a -> sandboxId.equals(a.sandbox()) && a.trigger() == Approval.Trigger.REQUEST).count();
        if (waiting >= MAX_PENDING_REQUESTS) {
            // a sandbox must not bury a person in prompts: its further requests are refused until these are decided
            LOG.warn("sandbox {}: {} egress requests already wait for approval; refused {} {}:{}", sandboxId, waiting, Json.printable(method),
                    Json.printable(host), port);
            return false;
        }
        Caller caller = new Caller(policy.clients().get(s.owner()), "egress-proxy", null, null);
        try {
            approvals.await(caller, Approval.Trigger.REQUEST, s.profile().rule("approveRequests"), sandboxId, "let sandbox " + sandboxId
                    + " (client '" + s.owner() + "') send " + Json.printable(method) + " " + Json.printable(host) + ":" + port
                    + Json.printable(target, 600));
            return true;
        } catch (AirlockException e) {
            return false;
        }
    }

    // --- outputs ---

    /** The caller's collected outputs, newest first. */
    public List<tools.jackson.databind.JsonNode> listOutputs() {
        return outputs.list(outputOwner());
    }

    public tools.jackson.databind.JsonNode outputs(String sandboxId) {
        return outputs.get(sandboxId, outputOwner());
    }

    public void readOutput(String sandboxId, String path, OutputStream sink) throws IOException {
        outputs.read(sandboxId, outputOwner(), path, sink);
    }

    public void deleteOutputs(String sandboxId) {
        outputs.delete(sandboxId, outputOwner());
        audit.record(AuditRecord.LIFECYCLE, sandboxId, lifecycle("outputs-deleted", null));
    }

    private static String outputOwner() {
        Caller c = require(Operation.OUTPUTS);
        return c.isServer() ? null : c.client().name();
    }

    // --- lifetime ---

    /**
     * Every half second, starts the destroy of each expired sandbox on its own thread, so one slow
     * destroy delays no other; nothing thrown ends the loop.
     */
    private void expireLoop() {
        long rounds = 0;
        while (!closed) {
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                return;
            }
            if (rounds++ % 120 == 0) {
                try {
                    outputs.sweep();
                } catch (RuntimeException e) {
                    LOG.warn("could not sweep old outputs: {}", e.getMessage());
                }
            }
            try {
                Instant now = Instant.now();
                for (ManagedSandbox s : sandboxes.values()) {
                    String why = s.destroying() ? null : s.expiryReason(now);
                    if (why != null) {
                        teardown.destroyInBackground(s, "expired", "expired: " + why);
                    }
                }
            } catch (Throwable t) {
                LOG.warn("expiry round failed, trying again in 0.5 s: {}", t.toString());
            }
        }
    }

    public Engine engine() {
        return engine;
    }

    /** Destroys every sandbox, in parallel, and waits for them; the engine and store are closed by their owner. */
    @Override
    public void close() {
        closed = true;
        expiry.interrupt();
        for (ManagedSandbox s : sandboxes.values()) {
            teardown.destroyInBackground(s, "destroyed", "destroyed at shutdown");
        }
        if (!teardown.awaitAll(SHUTDOWN_WAIT)) {
            LOG.warn("some sandboxes were still being destroyed {} s after shutdown began; the engine closes them", SHUTDOWN_WAIT.toSeconds());
        }
    }
}
