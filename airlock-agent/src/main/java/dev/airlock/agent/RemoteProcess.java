package dev.airlock.agent;

import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent.AgentProcess;
import dev.airlock.core.SandboxAgent.ProcessExit;
import dev.airlock.core.TerminalSize;
import dev.airlock.core.Trace;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;

/**
 * One process started through the agent. The {@code on...} methods run on the client's reader
 * thread only; they return false when the agent's frame does not fit this process's state.
 */
final class RemoteProcess implements AgentProcess, PendingRequest {

    /** Exit code reported when the program could not be started, as a shell does. */
    static final int START_FAILED_EXIT_CODE = 127;

    private final AgentClient client;
    private final int id;
    private final OutputListener listener;
    /** Started with EXEC_HELD (non-null): FORKED comes before STARTED, and this places the process. */
    private final ExecPlacement placement;
    /** Started in this spare supervisor (EXEC_SPARE), placed already; 0 otherwise. */
    private final int spare;
    /** Takes the next spare, which the agent forks when this process takes {@code spare}. */
    private final IntConsumer nextSpare;
    /** Started on a pseudo-terminal: its output is all STDOUT, and it may be resized. */
    private final boolean tty;
    /** Why the placement refused the process; written by the reader thread before {@code started} completes. */
    private volatile RuntimeException placementFailure;
    /** The pid, or -1 when the agent answered FAILED. */
    private final CompletableFuture<Integer> started = new CompletableFuture<>();
    /** For a held execution: the pid of the forked process (the command's supervisor), or -1 when it failed first. */
    private final CompletableFuture<Integer> forked = new CompletableFuture<>();
    private final CompletableFuture<ProcessExit> exit = new CompletableFuture<>();
    private final AtomicBoolean nextSpareNamed = new AtomicBoolean();
    /** Written by the reader thread before {@code exit} completes, so await sees it. */
    private RuntimeException listenerFailure;

    RemoteProcess(AgentClient client, int id, OutputListener listener, ExecPlacement placement, int spare, IntConsumer nextSpare,
                  boolean tty) {
        this.client = client;
        this.spare = spare;
        this.nextSpare = nextSpare;
        this.tty = tty;
        this.placement = placement;
        this.id = id;
        this.listener = listener;
    }

    int id() {
        return id;
    }

    /** Waits for STARTED or FAILED. */
    void awaitStarted(String command) throws IOException, InterruptedException {
        client.awaitReply(started, "starting " + command);
    }

    /**
     * FORKED: places the held process and lets it go on (RELEASE 1), or, if the placement throws,
     * has it end unstarted (RELEASE 0) and keeps why for the caller of start. Runs on the reader
     * thread, so the process waits for no other thread: one hand-off fewer on every execution.
     */
    boolean onForked(int pid) {
        if (placement == null || pid <= 0 || started.isDone() || !forked.complete(pid)) {
            return false;
        }
        boolean go = true;
        Trace.mark("exec: supervisor forked");
        try {
            placement.place(pid);
            Trace.mark("exec: placed");
        } catch (RuntimeException refused) {
            placementFailure = refused;
            go = false;
        }
        try {
            client.send(new FrameBuilder(Frame.RELEASE, "release").u32(id).u32(go ? 1 : 0).build());
        } catch (IOException closed) {
            // the connection is going down: every pending request, this one too, fails with it
        }
        return true;
    }

    /** NEXT_SPARE: only for a start in a spare, once, before STARTED or FAILED. */
    boolean onNextSpare(int pid) {
        if (spare <= 0 || pid <= 0 || started.isDone() || !nextSpareNamed.compareAndSet(false, true)) {
            return false;
        }
        nextSpare.accept(pid);
        return true;
    }

    /** Why the placement refused this process, or null. */
    RuntimeException placementFailure() {
        return placementFailure;
    }

    boolean onStarted(int pid) {
        Trace.mark("exec: started");
        // A held execution's STARTED comes after its FORKED, which named the supervisor: this is the
        // command, the supervisor's child, never the supervisor itself. A spare needs no FORKED,
        // unless it was gone and the agent held a new supervisor instead.
        int supervisor = forked.getNow(spare > 0 ? spare : -1);
        return pid > 0 && (placement == null || (supervisor > 0 && supervisor != pid)) && placementFailure == null && started.complete(pid);
    }

    boolean onOutput(boolean stdout, byte[] chunk) {
        if (!isRunning() || (tty && !stdout)) {   // a terminal's output is one stream
            return false;
        }
        if (listenerFailure == null) {
            // A failing listener must not take the connection, and every other process, down with it.
            try {
                if (stdout) {
                    listener.stdout(chunk);
                } else {
                    listener.stderr(chunk);
                }
            } catch (RuntimeException e) {
                listenerFailure = e;
            }
        }
        return true;
    }

    boolean onExit(int exitCode, int signal) {
        Trace.mark("exec: exited");
        return isRunning() && exit.complete(new ProcessExit(exitCode, signal, null));
    }

    boolean onStartFailed(String message) {
        if (started.isDone()) {
            return false;
        }
        started.complete(-1);
        forked.complete(-1);
        return exit.complete(new ProcessExit(START_FAILED_EXIT_CODE, 0, message));
    }

    private boolean isRunning() {
        return started.isDone() && !started.isCompletedExceptionally() && started.join() > 0 && !exit.isDone();
    }

    @Override
    public void fail(IOException cause) {
        forked.completeExceptionally(cause);
        started.completeExceptionally(cause);
        exit.completeExceptionally(cause);
    }

    @Override
    public int pid() {
        return started.getNow(-1);
    }

    @Override
    public void writeStdin(byte[] bytes) throws IOException {
        // An empty STDIN frame means "close": never send one for an empty write.
        int chunk = Frame.MAX_LENGTH - 64;
        for (int offset = 0; offset < bytes.length; offset += chunk) {
            int length = Math.min(chunk, bytes.length - offset);
            client.send(new FrameBuilder(Frame.STDIN, "standard input").u32(id).bytes(bytes, offset, length).build());
        }
    }

    @Override
    public void closeStdin() throws IOException {
        client.send(new FrameBuilder(Frame.STDIN, "standard input").u32(id).build());
    }

    @Override
    public void signal(int signal) throws IOException {
        if (signal < 1 || signal > 64) {
            throw new IllegalArgumentException("signal " + signal + " is not between 1 and 64");
        }
        client.send(new FrameBuilder(Frame.SIGNAL, "signal").u32(id).u32(signal).build());
    }

    @Override
    public void resize(TerminalSize size) throws IOException {
        if (!tty) {
            throw new IllegalStateException("process " + pid() + " has no terminal to resize: start it with a terminal size (tty)");
        }
        client.send(new FrameBuilder(Frame.RESIZE, "resize").u32(id).u32(size.rows()).u32(size.cols()).build());
    }

    @Override
    public ProcessExit await(Duration timeout) throws InterruptedException, IOException {
        try {
            exit.get(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            return null;
        } catch (ExecutionException e) {
            throw new IOException(e.getCause().getMessage(), e.getCause());
        }
        if (listenerFailure != null) {
            throw new IllegalStateException("the output listener of process " + pid() + " failed", listenerFailure);
        }
        return exit.join();
    }
}
