package dev.airlock.core;

import java.io.IOException;
import java.time.Duration;

/**
 * One process running in a sandbox. {@link #await()} waits for its end or its timeout and turns
 * how it ended into an {@link ExecResult}; the result is made once and kept, so a background
 * execution can be awaited by one thread and read by others.
 */
public final class Execution {

    static final int SIGKILL = 9;
    /** How long a killed process tree gets to report its exit before the result is made anyway. */
    private static final Duration KILL_GRACE = Duration.ofSeconds(5);

    private final SandboxAgent.AgentProcess process;
    private final CappedOutput output;
    private final Duration timeout;
    private final long memoryLimit;
    private final IsolationDriver.DriverSandbox sandbox;
    private final long oomBefore;
    private final long startNanos;
    private final Runnable ended;
    /**
     * Whether the host stopped the sandbox's processes or destroyed it: a SIGKILL, or a channel
     * that breaks, then means cancelled; a channel that breaks otherwise means the agent died.
     */
    private final java.util.function.BooleanSupplier sandboxStopped;
    private volatile ExecResult result;

    /**
     * @param ended run once, when the result is made (the sandbox's first run may be what a warm
     *              pool's refill waits for)
     */
    Execution(SandboxAgent.AgentProcess process, CappedOutput output, Duration timeout, long memoryLimit,
              IsolationDriver.DriverSandbox sandbox, long oomBefore, long startNanos, java.util.function.BooleanSupplier sandboxStopped,
              Runnable ended) {
        this.sandboxStopped = sandboxStopped;
        this.ended = ended;
        this.process = process;
        this.output = output;
        this.timeout = timeout;
        this.memoryLimit = memoryLimit;
        this.sandbox = sandbox;
        this.oomBefore = oomBefore;
        this.startNanos = startNanos;
    }

    /** The process id inside the sandbox. */
    public int pid() {
        return process.pid();
    }

    /** The result if the execution has ended, else null. */
    public ExecResult result() {
        return result;
    }

    public boolean isDone() {
        return result != null;
    }

    /** SIGKILL (9) kills the execution and everything it started; any other signal goes to its whole process group. */
    public void signal(int signal) {
        if (signal < 1 || signal > 64) {
            throw AirlockException.invalid("signal " + signal + " is not a signal number: give 1 to 64 (15 = TERM, 9 = KILL)");
        }
        try {
            process.signal(signal);
        } catch (IOException e) {
            // The sandbox is gone; so is the process.
        }
    }

    /**
     * Changes the size of the terminal of a process started with one ({@link ExecRequest#tty()});
     * its foreground programs get SIGWINCH. Nothing happens if it is gone.
     *
     * @throws AirlockException (invalid) if the process has no terminal
     */
    public void resize(TerminalSize size) {
        try {
            process.resize(size);
        } catch (IllegalStateException e) {
            throw AirlockException.invalid(e.getMessage());
        } catch (IOException e) {
            // The sandbox is gone; so is the process.
        }
    }

    /**
     * Appends to the process's standard input, for a process started with its input open
     * ({@code Sandbox.startAttached}).
     *
     * @throws IOException if the process's input is closed or the sandbox is gone
     */
    public void writeStdin(byte[] bytes) throws IOException {
        process.writeStdin(bytes);
    }

    /** Closes the process's standard input: it reads end-of-file. Nothing happens if it is gone. */
    public void closeStdin() {
        try {
            process.closeStdin();
        } catch (IOException e) {
            // The sandbox is gone; so is the process.
        }
    }

    /**
     * Waits for the end, or the timeout, and returns the result. Interrupting the waiting thread
     * cancels the execution: it is killed with everything it started, and the output so far is kept.
     */
    public synchronized ExecResult await() {
        if (result != null) {
            return result;
        }
        EndReason forced = null;
        SandboxAgent.ProcessExit exit = null;
        try {
            long left = timeout.toNanos() - (System.nanoTime() - startNanos);
            exit = process.await(Duration.ofNanos(Math.max(0, left)));
            if (exit == null) {
                forced = EndReason.TIMED_OUT;
            }
        } catch (InterruptedException e) {
            forced = EndReason.CANCELLED;
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            // The channel broke: the host destroyed or stopped the sandbox under the execution, or
            // its agent died with nobody on the host asking.
            forced = sandboxStopped.getAsBoolean() ? EndReason.CANCELLED : EndReason.AGENT_KILLED;
        }
        if (forced != null) {
            exit = kill();
        }
        result = result(exit, forced, Duration.ofNanos(System.nanoTime() - startNanos));
        ended.run();
        return result;
    }

    private SandboxAgent.ProcessExit kill() {
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

    private ExecResult result(SandboxAgent.ProcessExit exit, EndReason forced, Duration duration) {
        byte[] out = output.stdout();
        byte[] err = output.stderr();
        boolean truncated = output.truncated();
        if (forced == EndReason.TIMED_OUT) {
            return new ExecResult(out, err, exitCode(exit), forced, truncated, duration,
                    "timed out after " + format(timeout) + " and was killed");
        }
        if (forced == EndReason.CANCELLED) {
            return new ExecResult(out, err, exitCode(exit), forced, truncated, duration, "cancelled");
        }
        if (forced == EndReason.AGENT_KILLED) {
            if (sandbox.oomKills() > oomBefore) {
                // Where the sandbox's memory cgroup holds its kernel (gVisor's Sentry), going over
                // the limit ends the whole sandbox: still out of memory, and said so.
                return new ExecResult(out, err, 128 + SIGKILL, EndReason.OOM_KILLED, truncated, duration,
                        "killed by the kernel: the sandbox reached its memory limit of " + Limits.formatBytes(memoryLimit)
                                + ", and the whole sandbox ended with it");
            }
            return new ExecResult(out, err, exitCode(exit), forced, truncated, duration,
                    "the sandbox ended under the execution: its agent (PID 1) died without the host asking, most likely"
                            + " killed by a signal the program sent it (gVisor lets a sandbox's processes kill its init); create a new sandbox");
        }
        if (exit.startError() != null) {
            return new ExecResult(out, err, 127, EndReason.START_FAILED, truncated, duration, exit.startError());
        }
        if (exit.signal() == SIGKILL && sandboxStopped.getAsBoolean()) {
            return new ExecResult(out, err, 128 + SIGKILL, EndReason.CANCELLED, truncated, duration, "cancelled: the sandbox was destroyed");
        }
        if (exit.signal() != 0) {
            if (exit.signal() == SIGKILL && sandbox.oomKills() > oomBefore) {
                return new ExecResult(out, err, 128 + SIGKILL, EndReason.OOM_KILLED, truncated, duration,
                        "killed by the kernel: the sandbox reached its memory limit of " + Limits.formatBytes(memoryLimit));
            }
            return new ExecResult(out, err, 128 + exit.signal(), EndReason.SIGNALED, truncated, duration,
                    "killed by signal " + exit.signal());
        }
        return new ExecResult(out, err, exit.exitCode(), EndReason.EXITED, truncated, duration, null);
    }

    private static int exitCode(SandboxAgent.ProcessExit exit) {
        if (exit == null) {
            return -1;
        }
        return exit.signal() != 0 ? 128 + exit.signal() : exit.exitCode();
    }

    private static String format(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + "s" : d.toMillis() + "ms";
    }
}
