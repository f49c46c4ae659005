package dev.airlock.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;

/**
 * Turns requests into sandboxes: creates them through the isolation driver (from the warm pool
 * when the spec allows), runs one-shot code, and destroys what it created. It owns the broker that
 * serves each sandbox from the host (egress, credentials, request approvals): the driver attaches
 * every sandbox to it, and the engine closes the attachment once the sandbox is destroyed. On start
 * it reaps what earlier, crashed instances left behind; on close it destroys every sandbox it still
 * holds.
 */
public final class Engine implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Engine.class);
    /**
     * How long the warm pool's refill waits, at most, for the first run of the sandbox it handed
     * over to end: the refill (a container start) does not compete with that run for the CPU.
     */
    public static final java.time.Duration POOL_REFILL_WAITS_AT_MOST = WarmPool.SERVE_WINDOW;
    /**
     * Most sandboxes torn down in the background at once ({@link Sandbox#closeInBackground}); past
     * that, a close waits for its own teardown, so a client that creates and deletes faster than
     * sandboxes can be torn down is slowed to that pace, and the backlog stays bounded.
     */
    public static final int MAX_BACKGROUND_DESTROYS = 64;

    private final IsolationDriver driver;
    private final SandboxBroker broker;
    private final WarmPool pool;
    private final Set<Sandbox> live = ConcurrentHashMap.newKeySet();
    private final Map<SandboxId, Future<?>> destroying = new ConcurrentHashMap<>();
    private final ExecutorService background = Executors.newVirtualThreadPerTaskExecutor();
    private final Semaphore backgroundSlots = new Semaphore(MAX_BACKGROUND_DESTROYS);
    private final List<String> reaped;
    private volatile boolean closed;

    /**
     * @param broker   serves each sandbox from the host (its egress); {@link SandboxBroker#NONE}: no
     *                 sandbox may have network
     * @param poolSize how many never-used sandboxes of {@code poolSpec} to keep ready (0: none)
     */
    public Engine(IsolationDriver driver, SandboxBroker broker, int poolSize, SandboxSpec poolSpec) {
        this.driver = driver;
        this.broker = broker;
        Trace.mark("driver ready");
        this.reaped = driver.reapOrphans();
        Trace.mark("orphans reaped");
        this.pool = new WarmPool(() -> AttachedSandbox.createForPool(driver, broker, poolSpec), poolSpec, poolSize);
    }

    /** An engine whose sandboxes have no network ({@link SandboxBroker#NONE}). */
    public Engine(IsolationDriver driver, int poolSize, SandboxSpec poolSpec) {
        this(driver, SandboxBroker.NONE, poolSize, poolSpec);
    }

    public Engine(IsolationDriver driver, SandboxBroker broker) {
        this(driver, broker, 0, SandboxSpec.defaults());
    }

    /** An engine whose sandboxes have no network ({@link SandboxBroker#NONE}). */
    public Engine(IsolationDriver driver) {
        this(driver, SandboxBroker.NONE);
    }

    public IsolationDriver driver() {
        return driver;
    }

    /** What was reaped when this engine started, one line per item. */
    public List<String> reapedAtStart() {
        return reaped;
    }

    /** Creates a running sandbox. A pooled one is used when {@code spec} is the pool's spec. */
    public Sandbox create(SandboxSpec spec) {
        ensureOpen();
        if (!spec.credentials().isEmpty() && spec.network().isNone()) {
            throw AirlockException.invalid("the sandbox has credentials but no network policy: credentials are injected by the egress proxy,"
                    + " so allow their destinations in the network policy (or drop the credentials)");
        }
        AttachedSandbox as = pool.take(spec);
        if (as == null) {
            return track(new Sandbox(AttachedSandbox.create(driver, broker, spec), spec, this));
        }
        Sandbox sandbox = new Sandbox(as, spec, this);
        // the pool refills once the run this sandbox serves has ended, not beside it (see WarmPool)
        sandbox.whenServed(pool::served);
        return track(sandbox);
    }

    /**
     * Creates a running sandbox whose processes, memory and in-memory files are those {@link
     * Sandbox#checkpoint} saved in {@code checkpoint}; {@code spec} must be the spec that sandbox was
     * made from. Never from the warm pool. Only where the tier can checkpoint (UNAVAILABLE elsewhere).
     */
    public Sandbox restore(SandboxSpec spec, java.nio.file.Path checkpoint) {
        ensureOpen();
        return track(new Sandbox(AttachedSandbox.create(driver, broker, spec, checkpoint), spec, this));
    }

    private Sandbox track(Sandbox sandbox) {
        live.add(sandbox);
        if (closed) {
            sandbox.close();
            ensureOpen();
        }
        return sandbox;
    }

    /**
     * Runs code once in a fresh sandbox and destroys the sandbox. Interrupting the calling thread
     * cancels the run; the result then carries the output produced so far.
     */
    public RunResult run(RunRequest request, OutputListener listener) {
        ensureOpen();
        driver.check(request.spec(), List.of(request.language().interpreter()));
        Trace.mark("request checked");
        Sandbox sandbox = create(request.spec());
        Trace.mark("sandbox created");
        try {
            ExecRequest code = sandbox.codeRequest(request.language(), request.code());
            Trace.mark("code written");
            ExecResult result = sandbox.exec(code.withStdin(request.stdin()), listener);
            Trace.mark("code ran");
            return new RunResult(sandbox.id(), result);
        } finally {
            sandbox.closeInBackground();
        }
    }

    public RunResult run(RunRequest request) {
        return run(request, OutputListener.NONE);
    }

    /** How many never-used sandboxes the warm pool holds ready. */
    public int warmPoolReady() {
        return pool.readyCount();
    }

    /** How many sandboxes are being torn down in the background ({@link Sandbox#closeInBackground}). */
    public int tearingDownCount() {
        return destroying.size();
    }

    /** How many sandboxes are handed out and not yet destroyed. */
    public int liveCount() {
        return live.size();
    }

    /**
     * Waits until background destruction is done and the warm pool is full again, or
     * {@code timeout} passed. For benchmarks that measure one request at a time on a quiet host.
     */
    public boolean awaitQuiet(java.time.Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (destroying.isEmpty() && pool.isFull()) {
                return true;
            }
            Thread.sleep(5);
        }
        return false;
    }

    /** Destroys now ({@code wait}, or too many in the background), else in the background; the future completes once it is gone. */
    CompletableFuture<Void> destroy(Sandbox sandbox, AttachedSandbox ds, boolean wait) {
        live.remove(sandbox);
        if (wait || !backgroundSlots.tryAcquire()) {
            ds.destroy();
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> gone = new CompletableFuture<>();
        destroying.put(ds.id(), background.submit(() -> {
            try {
                ds.destroy();
            } catch (RuntimeException e) {
                LOG.warn("could not destroy sandbox {}: {}", ds.id(), e.getMessage());
            } finally {
                destroying.remove(ds.id());
                backgroundSlots.release();
                gone.complete(null);
            }
        }));
        return gone;
    }

    private void ensureOpen() {
        if (closed) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "the engine is shutting down");
        }
    }

    /** Destroys every sandbox this engine holds, waits for background destruction, closes the driver. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            pool.close();
            for (Sandbox sandbox : List.copyOf(live)) {
                try {
                    sandbox.close();
                } catch (RuntimeException e) {
                    LOG.warn("could not destroy sandbox {}: {}", sandbox.id(), e.getMessage());
                }
            }
            for (Future<?> f : List.copyOf(destroying.values())) {
                try {
                    f.get();
                } catch (Exception e) {
                    LOG.warn("background destroy failed: {}", e.getMessage());
                }
            }
            background.shutdown();
            Trace.mark("sandboxes destroyed");
        } finally {
            driver.close();
            Trace.mark("driver closed");
        }
    }
}
