package dev.airlock.server;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.Language;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxSpec;
import dev.airlock.egress.EgressRecord;
import dev.airlock.server.audit.Audit;
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

/**
 * The service behind every interface: creates and holds sandboxes, runs executions, moves files,
 * and destroys sandboxes when their time-to-live or idle timeout runs out. Interfaces (REST, later
 * MCP) only translate requests into these calls, so no check can be skipped by choosing a door.
 */
public final class SandboxService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxService.class);
    /** Background processes kept per sandbox, running or ended. */
    private static final int MAX_PROCESSES = 64;

    /** A validated create request. */
    public record CreateRequest(SandboxSpec spec, Map<String, String> labels, Duration ttl, Duration idleTimeout,
                                Language defaultLanguage) {

        public CreateRequest(SandboxSpec spec, Map<String, String> labels, Duration ttl, Duration idleTimeout) {
            this(spec, labels, ttl, idleTimeout, null);
        }

        public CreateRequest {
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
    private final Engine engine;
    private final SandboxStore store;
    private final ServerMetrics metrics;
    private final EgressLog egressLog;
    private final AuditLog audit;
    private final Map<String, ManagedSandbox> sandboxes = new ConcurrentHashMap<>();
    private final Thread expiry;
    private final List<String> reapedAtStart;
    private volatile boolean closed;

    SandboxService(ServerConfig config, Engine engine, SandboxStore store, ServerMetrics metrics) {
        this(config, engine, store, metrics, new EgressLog(), AuditLog.NONE);
    }

    /** {@code egressLog} is where the engine's egress proxies record (see {@link SandboxRuntime}). */
    SandboxService(ServerConfig config, Engine engine, SandboxStore store, ServerMetrics metrics, EgressLog egressLog, AuditLog audit) {
        this.egressLog = egressLog;
        this.audit = audit;
        this.config = config;
        this.engine = engine;
        this.store = store;
        this.metrics = metrics;
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

    public ManagedSandbox create(CreateRequest request) {
        if (sandboxes.size() >= config.maxSandboxes()) {
            throw new AirlockException(Kind.LIMIT_EXCEEDED, "this server already holds " + sandboxes.size()
                    + " sandboxes, its limit: destroy some, or raise --max-sandboxes");
        }
        Sandbox sandbox = engine.create(request.spec());
        ManagedSandbox managed = new ManagedSandbox(sandbox, request.labels(), Instant.now(), request.ttl(), request.idleTimeout(),
                request.defaultLanguage());
        try {
            store.insert(new SandboxStore.Row(managed.id(), engine.driver().instance(), managed.createdAt(), Json.specJson(request.spec())));
        } catch (RuntimeException e) {
            sandbox.close();
            throw e;
        }
        sandboxes.put(managed.id(), managed);
        metrics.sandboxCreated();
        Map<String, Object> d = lifecycle("created", null);
        d.put("limits", limits(request.spec().limits()));
        d.put("network", request.spec().network() == null ? "none" : request.spec().network().allow().size() + " destinations, "
                + request.spec().network().ranges().size() + " ranges");
        d.put("ttlSeconds", request.ttl() == null ? null : request.ttl().toSeconds());
        d.put("idleTimeoutSeconds", request.idleTimeout() == null ? null : request.idleTimeout().toSeconds());
        d.put("labels", request.labels() == null ? 0 : request.labels().size());
        audit.record(AuditRecord.LIFECYCLE, managed.id(), d);
        return managed;
    }

    public ManagedSandbox get(String id) {
        ManagedSandbox s = sandboxes.get(id);
        if (s == null) {
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
        return sandboxes.values().stream().filter(s -> s.matches(labelFilter))
                .sorted((a, b) -> a.createdAt().compareTo(b.createdAt())).toList();
    }

    public int size() {
        return sandboxes.size();
    }

    public ManagedSandbox extendTtl(String id, Duration ttl) {
        ManagedSandbox s = get(id);
        s.extend(ttl);
        return s;
    }

    public void destroy(String id) {
        ManagedSandbox s = sandboxes.remove(id);
        if (s == null) {
            throw notFound(id);
        }
        destroy(s, "destroyed", "destroyed on request");
    }

    private void destroy(ManagedSandbox s, String event, String why) {
        sandboxes.remove(s.id());
        try {
            s.sandbox().close();
        } finally {
            audit.record(AuditRecord.LIFECYCLE, s.id(), lifecycle(event, why));
            store.delete(s.id());
            egressLog.forget(s.id());
            metrics.sandboxDestroyed();
            LOG.info("sandbox {} {}", s.id(), why);
        }
    }

    /**
     * Replaces the sandbox's network policy; its open connections that the new policy denies are
     * closed. A sandbox created without network cannot be given some later (CONFLICT).
     */
    public ManagedSandbox updateNetwork(String id, NetworkPolicy policy) {
        ManagedSandbox s = get(id);
        s.sandbox().updateNetworkPolicy(policy);
        Map<String, Object> d = lifecycle("network-updated", null);
        d.put("network", policy.allow().size() + " destinations, " + policy.ranges().size() + " ranges");
        audit.record(AuditRecord.LIFECYCLE, s.id(), d);
        LOG.info("sandbox {}: network policy replaced ({} allowed destinations, {} ranges)", s.id(), policy.allow().size(), policy.ranges().size());
        return s;
    }

    /** The sandbox's recent egress records, oldest first (at most {@link EgressLog#PER_SANDBOX}). */
    public List<EgressRecord> egress(String id) {
        ManagedSandbox s = get(id);
        return egressLog.of(s.id());
    }

    /** Runs to the end; output also goes to {@code listener} as it is produced. */
    public ExecResult exec(String id, ExecRequest request, OutputListener listener) {
        ManagedSandbox s = get(id);
        s.executionStarted();
        recordExecution(s, request, null);
        try {
            ExecResult r = s.sandbox().exec(request, listener);
            metrics.execEnded(r);
            recordResult(s, r, null, -1, -1);
            return r;
        } catch (RuntimeException e) {
            recordFailure(s, null, e);
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
        ManagedSandbox s = get(id);
        s.executionStarted();
        recordExecution(s, request, null);
        try {
            ExecResult r = run.run(listener -> s.sandbox().start(request, listener));
            metrics.execEnded(r);
            recordResult(s, r, null, -1, -1);
            return r;
        } catch (IOException | RuntimeException e) {
            recordFailure(s, null, e);
            throw e;
        } finally {
            s.executionEnded();
        }
    }

    private void recordExecution(ManagedSandbox s, ExecRequest request, String processId) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("commandDigest", Audit.digest(request.argv()));
        d.put("argc", request.argv().size());
        d.put("cwdDigest", Audit.digest(request.cwd()));
        d.put("envCount", request.env() == null ? 0 : request.env().size());
        d.put("stdinBytes", request.stdin() == null ? 0 : request.stdin().length);
        d.put("timeoutMs", request.timeout() == null ? null : request.timeout().toMillis());
        d.put("background", processId != null);
        d.put("process", processId);
        d.put("limits", limits(s.sandbox().spec().limits()));
        audit.record(AuditRecord.EXECUTION, s.id(), d);
    }

    private void recordResult(ManagedSandbox s, ExecResult r, String processId, long outBytes, long errBytes) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("process", processId);
        d.put("exitCode", r.exitCode());
        d.put("endReason", r.endReason() == null ? null : r.endReason().name().toLowerCase(java.util.Locale.ROOT));
        d.put("durationMs", r.duration() == null ? null : r.duration().toMillis());
        d.put("stdoutBytes", outBytes >= 0 ? outBytes : r.stdout() == null ? 0 : r.stdout().length);
        d.put("stderrBytes", errBytes >= 0 ? errBytes : r.stderr() == null ? 0 : r.stderr().length);
        d.put("truncated", r.truncated());
        d.put("killReason", r.endReason() == dev.airlock.core.EndReason.EXITED ? null : r.message());
        audit.record(AuditRecord.RESULT, s.id(), d);
    }

    private void recordFailure(ManagedSandbox s, String processId, Exception e) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("process", processId);
        d.put("endReason", "failed");
        d.put("error", e instanceof AirlockException ae ? ae.kind().name().toLowerCase(java.util.Locale.ROOT) : e.getClass().getSimpleName());
        audit.record(AuditRecord.RESULT, s.id(), d);
    }

    private static Map<String, Object> limits(dev.airlock.core.Limits l) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("memoryBytes", l.memoryBytes());
        d.put("pids", l.pids());
        d.put("cpus", l.cpus());
        d.put("timeoutMs", l.timeout() == null ? null : l.timeout().toMillis());
        d.put("outputBytes", l.outputBytes());
        d.put("fileSizeBytes", l.fileSizeBytes());
        d.put("openFiles", l.openFiles());
        d.put("diskBytes", l.diskBytes());
        return d;
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
    public ExecRequest codeRequest(String id, Language language, String code) {
        ManagedSandbox s = get(id);
        engine.driver().check(s.sandbox().spec(), List.of(language.interpreter()));
        return s.sandbox().codeRequest(language, code);
    }

    public BackgroundProcess startBackground(String id, ExecRequest request) {
        ManagedSandbox s = get(id);
        if (s.processes().stream().filter(BackgroundProcess::running).count() >= MAX_PROCESSES) {
            throw new AirlockException(Kind.LIMIT_EXCEEDED, "sandbox " + id + " already runs " + MAX_PROCESSES
                    + " background processes: kill some first");
        }
        s.executionStarted();
        String processId = s.newProcessId();
        recordExecution(s, request, processId);
        Execution execution;
        try {
            execution = s.sandbox().start(request, OutputListener.NONE);
        } catch (RuntimeException e) {
            s.executionEnded();
            recordFailure(s, processId, e);
            throw e;
        }
        BackgroundProcess p = new BackgroundProcess(processId, request.argv(), Instant.now(), execution);
        s.addProcess(p);
        String actor = Audit.actor();
        Thread.ofVirtual().name("airlock-background-" + p.id()).start(() -> {
            try (Audit.Scope ignored = Audit.as(actor)) {
                ExecResult r = execution.await();
                metrics.execEnded(r);
                recordResult(s, r, processId, -1, -1);
            } catch (RuntimeException e) {
                recordFailure(s, processId, e);
                throw e;
            } finally {
                s.executionEnded();
            }
        });
        return p;
    }

    // --- files: every path is resolved by the agent, inside the sandbox ---

    public FileInfo writeFile(String id, String path, InputStream content) {
        ManagedSandbox s = get(id);
        long max = s.sandbox().spec().limits().fileSizeBytes();
        return files(s, "write", path, agent -> {
            agent.writeFile(path, content, max, 0644);
            return agent.stat(path);
        });
    }

    public void readFile(String id, String path, OutputStream sink) {
        ManagedSandbox s = get(id);
        long max = s.sandbox().spec().limits().fileSizeBytes();
        CountingOutputStream counted = new CountingOutputStream(sink);
        files(s, "read", path, agent -> {
            agent.readFile(path, max, counted);
            return counted;
        });
    }

    public FileInfo stat(String id, String path) {
        return files(get(id), "stat", path, agent -> agent.stat(path));
    }

    public List<FileInfo> list(String id, String path) {
        return files(get(id), "list", path, agent -> agent.list(path));
    }

    public FileInfo mkdir(String id, String path, boolean parents) {
        return files(get(id), "mkdir", path, agent -> {
            agent.mkdir(path, parents);
            return agent.stat(path);
        });
    }

    public void remove(String id, String path, boolean recursive) {
        files(get(id), "remove", path, agent -> {
            agent.remove(path, recursive);
            return null;
        });
    }

    public FileInfo rename(String id, String from, String to) {
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

    /** Counts the bytes of a file read, for its audit record. */
    private static final class CountingOutputStream extends java.io.FilterOutputStream {
        long count;

        CountingOutputStream(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count += len;
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

    // --- lifetime ---

    private void expireLoop() {
        while (!closed) {
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                return;
            }
            Instant now = Instant.now();
            for (ManagedSandbox s : List.copyOf(sandboxes.values())) {
                String why = s.expiryReason(now);
                if (why != null && sandboxes.remove(s.id()) != null) {
                    try {
                        destroy(s, "expired", "expired: " + why);
                    } catch (RuntimeException e) {
                        LOG.warn("could not destroy expired sandbox {}: {}", s.id(), e.getMessage());
                    }
                }
            }
        }
    }

    public Engine engine() {
        return engine;
    }

    /** Destroys every sandbox; the engine and store are closed by their owner. */
    @Override
    public void close() {
        closed = true;
        expiry.interrupt();
        for (ManagedSandbox s : List.copyOf(sandboxes.values())) {
            try {
                destroy(s, "destroyed", "destroyed at shutdown");
            } catch (RuntimeException e) {
                LOG.warn("could not destroy sandbox {} at shutdown: {}", s.id(), e.getMessage());
            }
        }
    }
}
