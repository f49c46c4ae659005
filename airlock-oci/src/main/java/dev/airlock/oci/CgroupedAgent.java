package dev.airlock.oci;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A sandbox's agent whose executions each run in their own cgroup ({@link ExecCgroups}): SIGKILL to
 * an execution (its timeout, a cancel, a kill) kills everything in that cgroup in one write, so
 * nothing it started survives, whatever its process group (the agent's own kill of the execution's
 * tree does the same by another way, and is the fallback). The agent places the execution's
 * supervisor, which forks the command only after the placement, so the command is born inside.
 * Other signals still go to its process group, and a process left behind by an execution that
 * exited on its own keeps running, as before.
 */
final class CgroupedAgent implements SandboxAgent {

    private static final int SIGKILL = 9;

    private final AgentClient agent;
    private final ExecCgroups cgroups;

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
        AgentProcess process = agent.start(request, listener, pid -> cgroup.set(cgroups.place(pid)));
        // null when the agent could not start it (FAILED came before FORKED): nothing to kill
        return cgroup.get() == null ? process : new CgroupedProcess(process, cgroup.get());
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
        agent.close();
    }
}
