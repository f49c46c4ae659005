package dev.airlock.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A running sandbox handed out by the {@link Engine}. Closing it destroys it: every process in it
 * is killed and all of its state removed. Executions still running when it is closed end as
 * {@link EndReason#CANCELLED} with the output they produced so far.
 */
public final class Sandbox implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Sandbox.class);

    private final IsolationDriver.DriverSandbox driverSandbox;
    private final AttachedSandbox attached;
    private final SandboxSpec spec;
    private final Engine engine;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean stopped = new AtomicBoolean();
    /** Held while the sandbox is paused or resumed, so the two never interleave. */
    private final Object pauseLock = new Object();
    private volatile boolean paused;
    /** Paused to disk: its processes saved and stopped, its agent gone until it is restored. */
    private volatile boolean onDisk;
    private volatile NetworkPolicy network;
    /** What waits for this sandbox's first run to end (a warm pool's refill), or null. */
    private final java.util.concurrent.atomic.AtomicReference<Runnable> whenServed = new java.util.concurrent.atomic.AtomicReference<>();

    Sandbox(AttachedSandbox attached, SandboxSpec spec, Engine engine) {
        this.attached = attached;
        this.driverSandbox = attached.sandbox();
        this.spec = spec;
        this.engine = engine;
        this.network = spec.network();
    }

    /** The network policy in force now (it may have changed since creation). */
    public NetworkPolicy network() {
        return network;
    }

    /**
     * Replaces the network policy. Connections still open that the new policy denies are closed.
     *
     * @throws AirlockException (CONFLICT) if the sandbox was created without network
     */
    public void updateNetworkPolicy(NetworkPolicy policy) {
        ensureOpen();
        NetworkPolicy p = policy == null ? NetworkPolicy.NONE : policy;
        if (!attached.attachment().bridged()) {
            if (p.isNone()) {
                network = p;    // no network before, none now: nothing to change
                return;
            }
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id()
                    + " was created without network: create it with a network policy to change it later");
        }
        attached.attachment().updateNetworkPolicy(p);
        network = p;
    }

    public SandboxId id() {
        return driverSandbox.id();
    }

    /** The digest of its image's files, or null for the {@code system} image (see {@link IsolationDriver.DriverSandbox#imageDigest()}). */
    public String imageDigest() {
        return driverSandbox.imageDigest();
    }

    public SandboxSpec spec() {
        return spec;
    }

    /** Its CPU time and memory now, or null where its isolation tier cannot tell cheaply (see {@link IsolationDriver.DriverSandbox#usage()}). */
    public IsolationDriver.Usage usage() {
        return isOpen() ? driverSandbox.usage() : null;
    }

    /**
     * Freezes every process of the sandbox, its agent included: nothing in it runs until
     * {@link #resume()}. Executions already running are frozen where they are (their timeouts keep
     * counting); new executions and file operations are refused (CONFLICT) until it resumes.
     * Pausing a paused sandbox does nothing. Destroying a paused sandbox resumes it first, so that
     * its outputs can be collected and its processes die.
     *
     * @throws AirlockException UNAVAILABLE if the sandbox's isolation tier cannot pause
     */
    public void pause() {
        synchronized (pauseLock) {
            ensureOpen();
            if (!paused) {
                driverSandbox.pause();
                paused = true;
            }
        }
    }

    /**
     * Pauses the sandbox to disk: its processes, with their memory and in-memory files, are saved
     * into the empty directory {@code dir} and stopped, so that it holds no memory until {@link
     * #resume()} restores them where they were (seconds). Meanwhile it is paused as {@link #pause()}
     * leaves it; destroying it then discards the saved processes without restoring them (so its
     * outputs are not collected). Pausing one already paused to disk does nothing.
     *
     * @throws AirlockException UNAVAILABLE where the tier cannot (gVisor and the microVM can here), CONFLICT
     *                          while an execution runs or the sandbox is paused in memory
     */
    public void pauseToDisk(java.nio.file.Path dir) {
        synchronized (pauseLock) {
            ensureOpen();
            if (onDisk) {
                return;
            }
            if (paused) {
                throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id()
                        + " is paused in memory: resume it, then pause it to disk");
            }
            checkpointing = true;
            try {
                driverSandbox.suspend(dir);
                onDisk = true;
                paused = true;
            } finally {
                checkpointing = false;
            }
        }
    }

    /** Whether the sandbox is paused to disk ({@link #pauseToDisk}). */
    public boolean isOnDisk() {
        return onDisk;
    }

    /** Thaws a paused sandbox, or restores one paused to disk; resuming one that runs does nothing. */
    public void resume() {
        synchronized (pauseLock) {
            ensureOpen();
            if (paused) {
                if (onDisk) {
                    driverSandbox.wake();
                    onDisk = false;
                } else {
                    driverSandbox.resume();
                }
                paused = false;
            }
        }
    }

    /**
     * Saves every process of the sandbox with its memory and in-memory files into the empty
     * directory {@code dir} ({@link Engine#restore}); the sandbox runs on. Not while paused.
     *
     * @throws AirlockException UNAVAILABLE where the tier cannot (gVisor and the microVM can here), CONFLICT
     *                          while an execution runs or the sandbox is paused
     */
    public void checkpoint(java.nio.file.Path dir) {
        synchronized (pauseLock) {
            ensureOpen();
            if (paused) {
                throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id() + " is paused: resume it first, then checkpoint it");
            }
            checkpointing = true;
            try {
                driverSandbox.checkpoint(dir);
            } finally {
                checkpointing = false;
            }
        }
    }

    /** While a checkpoint runs (seconds) the agent is between two connections: requests are refused, the sandbox is not seen as ended. */
    private volatile boolean checkpointing;

    /** Whether the sandbox is paused: its processes frozen until {@link #resume()}. */
    public boolean isPaused() {
        return paused;
    }

    public boolean isOpen() {
        return !closed.get() && (checkpointing || onDisk || driverSandbox.agent().isOpen());
    }

    /** Runs a process to its end (or its timeout) and returns what it produced. */
    public ExecResult exec(ExecRequest request) {
        return exec(request, OutputListener.NONE);
    }

    /**
     * Runs a process to its end, passing output to {@code listener} as it is produced. Interrupting
     * the calling thread cancels the execution: it is killed with everything it started.
     */
    public ExecResult exec(ExecRequest request, OutputListener listener) {
        Trace.mark("exec: asked");
        ExecResult r = start(request, listener).await();
        Trace.mark("exec: answered");
        return r;
    }

    /**
     * Starts a process and returns at once; its stdin is fed and closed. The timeout counts from
     * now; it is enforced by whoever calls {@link Execution#await()}.
     */
    public Execution start(ExecRequest request, OutputListener listener) {
        return start(request, new CappedOutput(spec.limits().outputBytes(), listener));
    }

    /**
     * Starts a process like {@link #start(ExecRequest, OutputListener)} whose output, capped at the
     * output limit, only goes to {@code listener}: its result's stdout and stderr are empty, so a
     * long-lived process holds no output in memory (the listener stores it elsewhere).
     */
    public Execution startStreaming(ExecRequest request, OutputListener listener) {
        return start(request, new CappedOutput(spec.limits().outputBytes(), listener, false));
    }

    /**
     * Starts a long-lived process whose standard input stays open for {@link Execution#writeStdin}
     * and whose output goes, unretained and uncapped, only to {@code listener}: for a process that
     * answers requests for as long as it lives (an interpreter context), where the listener bounds
     * what it keeps of each answer. {@code request.stdin()} is written first.
     */
    public Execution startAttached(ExecRequest request, OutputListener listener) {
        return start(request, new CappedOutput(Long.MAX_VALUE, listener, false), false);
    }

    /**
     * Starts a process like {@link #startStreaming} whose standard input stays open for {@link
     * Execution#writeStdin} until {@link Execution#closeStdin}: for a door that feeds a background
     * process as it runs. {@code request.stdin()} is written first.
     */
    public Execution startStreamingWithInput(ExecRequest request, OutputListener listener) {
        return start(request, new CappedOutput(spec.limits().outputBytes(), listener, false), false);
    }

    private Execution start(ExecRequest request, CappedOutput output) {
        return start(request, output, true);
    }

    private Execution start(ExecRequest request, CappedOutput output, boolean closeStdin) {
        ensureRunning();
        Duration timeout = request.timeout() != null ? request.timeout() : spec.limits().timeout();
        long oomBefore = driverSandbox.oomKills();
        long start = System.nanoTime();
        SandboxAgent.AgentProcess process;
        try {
            process = driverSandbox.agent().start(request.withEnv(environment(request)), output);
        } catch (IOException e) {
            throw closedOrBroken(e);
        }
        try {
            if (request.stdin().length > 0) {
                process.writeStdin(request.stdin());
            }
            if (closeStdin) {
                process.closeStdin();
            }
        } catch (IOException e) {
            // The process started, then the channel broke (the sandbox is being destroyed): the
            // execution reports that as cancelled, with whatever output it produced.
        }
        return new Execution(process, output, timeout, spec.limits().memoryBytes(), driverSandbox, oomBefore, start, () -> stopped.get() || closed.get(), this::served);
    }

    private Map<String, String> environment(ExecRequest request) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", "/usr/bin:/bin:/usr/sbin:/sbin");
        env.put("HOME", "/workspace");
        env.put("USER", "sandbox");
        env.put("LANG", "C.UTF-8");
        env.put("TMPDIR", "/tmp");
        // No sandbox has a display: matplotlib draws to files (savefig), with its cache in /tmp, not /workspace
        env.put("MPLBACKEND", "Agg");
        env.put("MPLCONFIGDIR", "/tmp/.matplotlib");
        env.putAll(driverSandbox.imageEnvironment());
        if (attached.attachment().bridged()) {
            int egress = SandboxBroker.BRIDGE_PORT;
            // The agent's bridge to the host's policy proxy. socks5h: names resolve on the host.
            String http = "http://127.0.0.1:" + egress;
            env.put("HTTP_PROXY", http);
            env.put("HTTPS_PROXY", http);
            env.put("http_proxy", http);
            env.put("https_proxy", http);
            env.put("ALL_PROXY", "socks5h://127.0.0.1:" + egress);
            env.put("all_proxy", "socks5h://127.0.0.1:" + egress);
            env.put("NO_PROXY", "localhost,127.0.0.1,::1");
            env.put("no_proxy", "localhost,127.0.0.1,::1");
        }
        env.putAll(attached.attachment().environment());
        if (request.tty() != null) {
            env.put("TERM", "xterm-256color");   // what browser terminals and most others emulate; the spec or request may say otherwise
        }
        env.putAll(spec.env());
        env.putAll(request.env());
        return env;
    }

    /**
     * Places {@code code} where {@code language} expects it and returns the request that runs it.
     * The code goes into a file rather than onto the command line, so its size is not bounded by
     * the kernel's argument limit.
     */
    public ExecRequest codeRequest(Language language, String code) {
        writeFile(language.codePath(), code.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return new ExecRequest(language.command(), Map.of(), ExecRequest.DEFAULT_CWD, null, null);
    }

    /**
     * Kills every process in the sandbox but its agent and waits until they are gone, ahead of
     * {@link #close()}, so that what the sandbox leaves can be read while nothing changes it; no
     * process can start afterwards. Executions it ends report {@link EndReason#CANCELLED}.
     *
     * @throws IOException if processes remain after the agent's wait, or the agent did not answer
     */
    public void stopProcesses() throws IOException {
        ensureOpen();
        thawForTeardown();
        stopped.set(true);
        driverSandbox.agent().killAll();
    }

    /** The agent, for file operations; every path is resolved inside the sandbox. */
    public SandboxAgent files() {
        ensureRunning();
        return driverSandbox.agent();
    }

    /** Creates or replaces a file inside the sandbox (parents are created). */
    public void writeFile(String path, byte[] content) {
        ensureRunning();
        if (path == null || !path.startsWith("/") || path.indexOf('\0') >= 0) {
            throw AirlockException.invalid("path '" + path + "' must be an absolute path inside the sandbox");
        }
        try {
            driverSandbox.agent().writeFile(path, content, 0644);
        } catch (IOException e) {
            if (!driverSandbox.agent().isOpen()) {
                throw closedOrBroken(e);
            }
            // The agent's message already names the path and what went wrong.
            throw AirlockException.invalid("sandbox " + id() + ": " + e.getMessage());
        }
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id() + " is destroyed: create a new one");
        }
    }

    /**
     * Refuses (CONFLICT) what needs the sandbox's agent while the sandbox is destroyed or paused: the
     * engine's own operations check it, and so do callers that reach the agent another way (a
     * signal to a running execution, a cell sent to a long-lived interpreter).
     */
    public void ensureRunning() {
        ensureOpen();
        if (paused) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id()
                    + " is paused: its processes are frozen; resume it first");
        }
        if (checkpointing) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id()
                    + " is being checkpointed (a memory snapshot, a few seconds): try again once it is taken");
        }
    }

    /** Resumes a paused sandbox on its way out: its agent collects outputs and its processes must be able to die. */
    private void thawForTeardown() {
        synchronized (pauseLock) {
            if (onDisk) {
                paused = false; // nothing runs to thaw: the driver discards the saved processes with the sandbox
            } else if (paused) {
                try {
                    driverSandbox.resume();
                } catch (RuntimeException e) {
                    LOG.warn("sandbox {}: could not resume it before destroying it: {}", id(), e.getMessage());
                }
                paused = false;
            }
        }
    }

    private AirlockException closedOrBroken(IOException e) {
        if (closed.get()) {
            return new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id() + " is destroyed: create a new one");
        }
        return new AirlockException(AirlockException.Kind.INTERNAL, "lost the channel to sandbox " + id() + ": " + e.getMessage(), e);
    }

    /** Destroys the sandbox and waits until everything of it is gone. */
    @Override
    public void close() {
        served();
        if (closed.compareAndSet(false, true)) {
            thawForTeardown();
            engine.destroy(this, attached, true);
        }
    }

    /** Runs {@code action} once, when this sandbox's first execution ends or it is closed, whichever comes first. */
    void whenServed(Runnable action) {
        whenServed.set(action);
    }

    private void served() {
        Runnable action = whenServed.getAndSet(null);
        if (action != null) {
            action.run();
        }
    }

    /**
     * Destroys the sandbox in the background (at most {@link Engine#MAX_BACKGROUND_DESTROYS} at
     * once, else now); {@link Engine#close()} still waits for it. Stop its processes first where
     * nothing of it may run once this returns.
     *
     * @return completes once the sandbox is gone (at once if it was closed already)
     */
    public CompletableFuture<Void> closeInBackground() {
        served();
        if (closed.compareAndSet(false, true)) {
            thawForTeardown();
            return engine.destroy(this, attached, false);
        }
        return CompletableFuture.completedFuture(null);
    }
}
