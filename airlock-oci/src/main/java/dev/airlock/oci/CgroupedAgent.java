package dev.airlock.oci;

import dev.airlock.agent.AgentClient;
import dev.airlock.agent.ExecPlacement;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxAgent.FileOperationException;
import dev.airlock.core.Trace;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A sandbox's agent whose executions each run in their own cgroup ({@link ExecCgroups}): SIGKILL to
 * an execution (its timeout, a cancel, a kill) kills everything in that cgroup in one write, so
 * nothing it started survives, whatever its process group (the agent's own kill of the execution's
 * tree does the same by another way, and is the fallback). The agent places the execution's
 * supervisor, which forks the command only after the placement, so the command is born inside.
 * Other signals still go to its process group, and a process left behind by an execution that
 * exited on its own keeps running, as before.
 *
 * <p>Moving a process into a cgroup waits for an RCU grace period (milliseconds, most of an exec's
 * cost on a quiet host), so it is done ahead: a spare supervisor, forked by the agent and placed in
 * the next execution's cgroup before anything waits for it, takes the next execution. A pooled
 * sandbox asks for its first spare while it waits in the pool ({@link #prepareFirstSpare}); any other
 * asks at its first execution, which then waits for it (a sandbox created and left idle costs no
 * spare: it was a fifth of an idle create's CPU on a 2-core host). An execution that takes a
 * spare has the agent fork the next one first, which is placed in the background. An execution that
 * comes while a spare is being placed waits for it (its move is under way; a move of its own would
 * wait for that one's), at most {@link #SPARE_WAIT}, then is held and placed as before. So a spare
 * waits in the sandbox whenever its code runs: what the code sees (its processes, what is left of
 * its pids limit) is the same every time.
 */
final class CgroupedAgent implements SandboxAgent {

    private static final int SIGKILL = 9;
    /** How long close waits for a spare being placed (a mkdir and a write to cgroup.procs). */
    private static final Duration SPARE_JOIN = Duration.ofSeconds(5);
    /** How long a start waits for a spare being placed before it is held and placed itself. */
    private static final Duration SPARE_WAIT = Duration.ofSeconds(1);

    private final AgentClient agent;
    private final ExecCgroups cgroups;
    private final Object spareLock = new Object();
    /** A spare supervisor, placed, waiting for the next start; null while none is. */
    private Spare ready;
    /** The thread making and placing the next spare; null while none does. */
    private Thread preparing;
    /** Set by close, or when a spare could not be placed: no more spares. */
    private boolean noSpares;

    /** A spare supervisor (its pid in the sandbox) and the execution cgroup it was placed in. */
    private record Spare(int pid, Path cgroup) {
    }

    CgroupedAgent(AgentClient agent, ExecCgroups cgroups) {
        this.agent = agent;
        this.cgroups = cgroups;
    }

    ExecCgroups cgroups() {
        return cgroups;
    }

    @Override
    public AgentProcess start(ExecRequest request, OutputListener listener) throws IOException {
        AtomicReference<Path> cgroup = new AtomicReference<>();
        ExecPlacement placement = pid -> cgroup.set(cgroups.place(pid));
        prepare(agent::spare);   // none ready or on its way (a first execution): one now, which takeSpare waits for
        Spare spare = takeSpare();
        AgentProcess process = spare == null ? agent.start(request, listener, placement)
                : agent.startInSpare(request, listener, placement, spare.pid(), next -> prepare(() -> next));
        if (spare != null && cgroup.get() == null) {
            cgroup.set(spare.cgroup());            // it runs in the spare (or was refused before it reached it)
        } else {
            if (spare != null) {
                cgroups.release(spare.cgroup());   // the spare was gone: a held supervisor took its place
            }
            prepare(agent::spare);
        }
        // null when the agent could not start it (FAILED came before FORKED): nothing to kill
        return cgroup.get() == null ? process : new CgroupedProcess(process, cgroup.get());
    }

    /** Where the pid of a spare to place comes from: the agent's answer to SPARE, or its NEXT_SPARE. */
    @FunctionalInterface
    private interface SpareSource {
        int pid() throws IOException, InterruptedException;
    }

    /** Has the agent fork the sandbox's first spare supervisor, and places it, in the background (a pooled sandbox's). */
    void prepareFirstSpare() {
        prepare(agent::spare);
    }

    /** Places the spare that {@code source} names, on a thread of its own, unless one is ready or on its way already. */
    private void prepare(SpareSource source) {
        synchronized (spareLock) {
            if (noSpares || ready != null || preparing != null) {
                return;
            }
            preparing = Thread.ofVirtual().name("airlock-spare-supervisor").start(() -> makeSpare(source));
        }
    }

    /**
     * The ready spare, waiting for one being placed (its move is under way: waiting for it costs
     * less than a held start, whose move would wait for that one's first), at most {@link #SPARE_WAIT}.
     */
    private Spare takeSpare() {
        synchronized (spareLock) {
            long deadline = System.nanoTime() + SPARE_WAIT.toNanos();
            while (ready == null && preparing != null && !noSpares) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    break;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(spareLock, left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            Spare spare = ready;
            ready = null;
            return spare;
        }
    }

    private void makeSpare(SpareSource source) {
        Spare made = null;
        boolean broken = false;
        try {
            int pid = source.pid();
            made = new Spare(pid, cgroups.place(pid));
            Trace.mark("spare supervisor placed");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (FileOperationException e) {
            // The agent could not fork one (the code holds every pid): the next start is held, and tries again.
        } catch (IOException | RuntimeException e) {
            // The sandbox is ending, or its cgroup refused the spare: starts are held and placed instead.
            broken = true;
        }
        synchronized (spareLock) {
            preparing = null;
            noSpares |= broken;
            spareLock.notifyAll();
            if (made != null && !noSpares) {
                ready = made;
            } else if (made != null) {
                cgroups.release(made.cgroup());   // empty once the sandbox ends; swept with it otherwise
            }
        }
    }

    /** One execution and its cgroup. */
    private final class CgroupedProcess implements AgentProcess {
        private final AgentProcess process;
        private final Path cgroup;

        CgroupedProcess(AgentProcess process, Path cgroup) {
            this.process = process;
            this.cgroup = cgroup;
        }

        @Override
        public int pid() {
            return process.pid();
        }

        @Override
        public void writeStdin(byte[] bytes) throws IOException {
            process.writeStdin(bytes);
        }

        @Override
        public void closeStdin() throws IOException {
            process.closeStdin();
        }

        @Override
        public void signal(int signal) throws IOException {
            if (signal != SIGKILL || !cgroups.kill(cgroup)) {
                process.signal(signal);
            }
        }

        @Override
        public void resize(dev.airlock.core.TerminalSize size) throws IOException {
            process.resize(size);
        }

        @Override
        public ProcessExit await(Duration timeout) throws InterruptedException, IOException {
            ProcessExit exit = process.await(timeout);
            if (exit != null) {
                cgroups.release(cgroup);
            }
            return exit;
        }
    }

    @Override
    public void writeFile(String path, byte[] content, int mode) throws IOException {
        agent.writeFile(path, content, mode);
    }

    @Override
    public long writeFile(String path, InputStream content, long maxBytes, int mode) throws IOException {
        return agent.writeFile(path, content, maxBytes, mode);
    }

    @Override
    public void readFile(String path, long maxBytes, OutputStream sink) throws IOException {
        agent.readFile(path, maxBytes, sink);
    }

    @Override
    public void readFileNoFollow(String path, long maxBytes, OutputStream sink) throws IOException {
        agent.readFileNoFollow(path, maxBytes, sink);
    }

    @Override
    public Tree walk(String directory, TreeBounds bounds) throws IOException {
        return agent.walk(directory, bounds);
    }

    @Override
    public void killAll() throws IOException {
        agent.killAll();
    }

    @Override
    public FileInfo stat(String path) throws IOException {
        return agent.stat(path);
    }

    @Override
    public List<FileInfo> list(String directory) throws IOException {
        return agent.list(directory);
    }

    @Override
    public void mkdir(String path, boolean parents) throws IOException {
        agent.mkdir(path, parents);
    }

    @Override
    public java.util.concurrent.CompletableFuture<Void> mkdirWithoutWaiting(String path, boolean parents) {
        return agent.mkdirWithoutWaiting(path, parents);
    }

    @Override
    public void remove(String path, boolean recursive) throws IOException {
        agent.remove(path, recursive);
    }

    @Override
    public void rename(String from, String to) throws IOException {
        agent.rename(from, to);
    }

    @Override
    public dev.airlock.core.PortConnection connect(int port) throws IOException {
        return agent.connect(port);
    }

    @Override
    public boolean isOpen() {
        return agent.isOpen();
    }

    @Override
    public void close() {
        Thread making;
        synchronized (spareLock) {
            noSpares = true;
            making = preparing;
        }
        agent.close();
        // No execution cgroup may be created after this returns and the sandbox's cgroup is removed.
        if (making != null) {
            try {
                making.join(SPARE_JOIN);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
