package dev.airlock.core;

import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A running sandbox handed out by the {@link Engine}. Closing it destroys it: every process in it
 * is killed and all of its state removed. Executions still running when it is closed end as
 * {@link EndReason#CANCELLED} with the output they produced so far.
 */
public final class Sandbox implements AutoCloseable {

    private static final int SIGKILL = 9;
    /** How long a killed process tree gets to report its exit before the result is made anyway. */
    private static final Duration KILL_GRACE = Duration.ofSeconds(5);

    private final IsolationDriver.DriverSandbox driverSandbox;
    private final SandboxSpec spec;
    private final Engine engine;
    private final AtomicBoolean closed = new AtomicBoolean();

    Sandbox(IsolationDriver.DriverSandbox driverSandbox, SandboxSpec spec, Engine engine) {
        this.driverSandbox = driverSandbox;
        this.spec = spec;
        this.engine = engine;
    }

    public SandboxId id() {
        return driverSandbox.id();
    }

    public SandboxSpec spec() {
        return spec;
    }

    public boolean isOpen() {
        return !closed.get() && driverSandbox.agent().isOpen();
    }

    /** Runs a process to its end (or its timeout) and returns what it produced. */
    public ExecResult exec(ExecRequest request) {
        return exec(request, OutputListener.NONE);
    }

    /**
     * Runs a process to its end, passing output to {@code listener} as it is produced. Interrupting
     * the calling thread cancels the execution: its process group is killed.
     */
    public ExecResult exec(ExecRequest request, OutputListener listener) {
        ensureOpen();
        Duration timeout = request.timeout() != null ? request.timeout() : spec.limits().timeout();
        CappedOutput output = new CappedOutput(spec.limits().outputBytes(), listener);
        long oomBefore = driverSandbox.oomKills();
        long start = System.nanoTime();
        SandboxAgent.AgentProcess process;
        try {
            process = driverSandbox.agent().start(request.withEnv(environment(request)), output);
        } catch (IOException e) {
            throw closedOrBroken(e);
        }
        EndReason forced = null;
        SandboxAgent.ProcessExit exit = null;
        try {
            if (request.stdin().length > 0) {
                process.writeStdin(request.stdin());
            }
            process.closeStdin();
            exit = process.await(timeout);
            if (exit == null) {
                forced = EndReason.TIMED_OUT;
            }
        } catch (InterruptedException e) {
            forced = EndReason.CANCELLED;
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            // The channel broke: the sandbox was destroyed or shut down under the execution.
            forced = EndReason.CANCELLED;
        }
        if (forced != null) {
            exit = kill(process);
        }
        Duration duration = Duration.ofNanos(System.nanoTime() - start);
        return result(exit, forced, output, duration, oomBefore, timeout);
    }

    private SandboxAgent.ProcessExit kill(SandboxAgent.AgentProcess process) {
        boolean interrupted = Thread.interrupted();
        try {
            process.signal(SIGKILL);
            return process.await(KILL_GRACE);
        } catch (IOException | InterruptedException e) {
            return null;
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private ExecResult result(SandboxAgent.ProcessExit exit, EndReason forced, CappedOutput output, Duration duration,
                              long oomBefore, Duration timeout) {
        byte[] out = output.stdout();
        byte[] err = output.stderr();
        boolean truncated = output.truncated();
        if (forced == EndReason.TIMED_OUT) {
            return new ExecResult(out, err, exitCode(exit, -1), forced, truncated, duration,
                    "timed out after " + format(timeout) + " and was killed");
        }
        if (forced == EndReason.CANCELLED) {
            return new ExecResult(out, err, exitCode(exit, -1), forced, truncated, duration, "cancelled");
        }
        if (exit.startError() != null) {
            return new ExecResult(out, err, 127, EndReason.START_FAILED, truncated, duration, exit.startError());
        }
        if (exit.signal() != 0) {
            if (exit.signal() == SIGKILL && driverSandbox.oomKills() > oomBefore) {
                return new ExecResult(out, err, 128 + SIGKILL, EndReason.OOM_KILLED, truncated, duration,
                        "killed by the kernel: the sandbox reached its memory limit of " + Limits.formatBytes(spec.limits().memoryBytes()));
            }
            return new ExecResult(out, err, 128 + exit.signal(), EndReason.SIGNALED, truncated, duration,
                    "killed by signal " + exit.signal());
        }
        return new ExecResult(out, err, exit.exitCode(), EndReason.EXITED, truncated, duration, null);
    }

    private static int exitCode(SandboxAgent.ProcessExit exit, int unknown) {
        if (exit == null) {
            return unknown;
        }
        return exit.signal() != 0 ? 128 + exit.signal() : exit.exitCode();
    }

    private static String format(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
    }

    private Map<String, String> environment(ExecRequest request) {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", "/usr/bin:/bin:/usr/sbin:/sbin");
        env.put("HOME", "/workspace");
        env.put("USER", "sandbox");
        env.put("LANG", "C.UTF-8");
        env.put("TMPDIR", "/tmp");
        env.putAll(spec.env());
        env.putAll(request.env());
        return env;
    }

    /** Creates or replaces a file inside the sandbox (parents are created). */
    public void writeFile(String path, byte[] content) {
        ensureOpen();
        if (path == null || !path.startsWith("/") || path.indexOf('\0') >= 0) {
            throw AirlockException.invalid("path '" + path + "' must be an absolute path inside the sandbox");
        }
        try {
            driverSandbox.agent().writeFile(path, content, 0644);
        } catch (IOException e) {
            if (!driverSandbox.agent().isOpen()) {
                throw closedOrBroken(e);
            }
            throw AirlockException.invalid("cannot write " + path + " in sandbox " + id() + ": " + e.getMessage());
        }
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id() + " is destroyed: create a new one");
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
        if (closed.compareAndSet(false, true)) {
            engine.destroy(this, driverSandbox, true);
        }
    }

    /** Destroys the sandbox in the background; {@link Engine#close()} still waits for it. */
    void closeInBackground() {
        if (closed.compareAndSet(false, true)) {
            engine.destroy(this, driverSandbox, false);
        }
    }
}
