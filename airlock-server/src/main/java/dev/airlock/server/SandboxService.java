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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.time.Instant;
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
    private final Map<String, ManagedSandbox> sandboxes = new ConcurrentHashMap<>();
    private final Thread expiry;
    private final List<String> reapedAtStart;
    private volatile boolean closed;

    SandboxService(ServerConfig config, Engine engine, SandboxStore store, ServerMetrics metrics) {
        this(config, engine, store, metrics, new EgressLog());
    }

    /** {@code egressLog} is where the engine's egress proxies record (see {@link SandboxRuntime}). */
    SandboxService(ServerConfig config, Engine engine, SandboxStore store, ServerMetrics metrics, EgressLog egressLog) {
        this.egressLog = egressLog;
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
        destroy(s, "destroyed on request");
    }

    private void destroy(ManagedSandbox s, String why) {
        sandboxes.remove(s.id());
        try {
            s.sandbox().close();
        } finally {
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
        try {
            ExecResult r = s.sandbox().exec(request, listener);
            metrics.execEnded(r);
            return r;
        } finally {
            s.executionEnded();
        }
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
        Execution execution;
        try {
            execution = s.sandbox().start(request, OutputListener.NONE);
        } catch (RuntimeException e) {
            s.executionEnded();
            throw e;
        }
        BackgroundProcess p = new BackgroundProcess(s.newProcessId(), request.argv(), Instant.now(), execution);
        s.addProcess(p);
        Thread.ofVirtual().name("airlock-background-" + p.id()).start(() -> {
            try {
                metrics.execEnded(execution.await());
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
        return files(s, path, agent -> {
            agent.writeFile(path, content, max, 0644);
            return agent.stat(path);
        });
    }

    public void readFile(String id, String path, OutputStream sink) {
        ManagedSandbox s = get(id);
        long max = s.sandbox().spec().limits().fileSizeBytes();
        files(s, path, agent -> {
            agent.readFile(path, max, sink);
            return null;
        });
    }

    public FileInfo stat(String id, String path) {
        return files(get(id), path, agent -> agent.stat(path));
    }

    public List<FileInfo> list(String id, String path) {
        return files(get(id), path, agent -> agent.list(path));
    }

    public FileInfo mkdir(String id, String path, boolean parents) {
        return files(get(id), path, agent -> {
            agent.mkdir(path, parents);
            return agent.stat(path);
        });
    }

    public void remove(String id, String path, boolean recursive) {
        files(get(id), path, agent -> {
            agent.remove(path, recursive);
            return null;
        });
    }

    public FileInfo rename(String id, String from, String to) {
        ManagedSandbox s = get(id);
        requireAbsolute(to);
        return files(s, from, agent -> {
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

    private <T> T files(ManagedSandbox s, String path, FileOperation<T> op) {
        requireAbsolute(path);
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
                        destroy(s, "expired: " + why);
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
                destroy(s, "destroyed at shutdown");
            } catch (RuntimeException e) {
                LOG.warn("could not destroy sandbox {} at shutdown: {}", s.id(), e.getMessage());
            }
        }
    }
}
