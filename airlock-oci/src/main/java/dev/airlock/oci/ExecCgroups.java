package dev.airlock.oci;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Gives every execution of one sandbox its own cgroup below the sandbox's, in the cgroup v2
 * hierarchy (the whole tree on a v2 host, the unified mount of a hybrid one), so that a timeout or
 * a kill ends everything the execution started: {@code cgroup.kill} reaches every process in it,
 * whether it called setsid, double-forked or changed its process group.
 *
 * <p>The host, never the sandbox, creates the cgroup and moves the execution's first process into
 * it, while the agent holds that process before it execs (see {@code AgentClient.start} with an
 * {@code ExecPlacement}): all the execution's code is born inside. Nothing in the sandbox can leave
 * it: the sandbox has no cgroup filesystem (no {@code /sys}, no mount) and no capability.
 */
final class ExecCgroups {

    /** Each execution's cgroup is {@value #PREFIX}N under the sandbox's. */
    static final String PREFIX = "x";

    private final Path sandboxCgroup;
    private final long agentHostPid;
    private final AtomicLong next = new AtomicLong(1);
    /** Cgroups of ended executions whose processes (daemons it left) still live; removed once empty. */
    private final Set<Path> lingering = ConcurrentHashMap.newKeySet();

    private ExecCgroups(Path sandboxCgroup, long agentHostPid) {
        this.sandboxCgroup = sandboxCgroup;
        this.agentHostPid = agentHostPid;
    }

    /**
     * The execution cgroups of the sandbox whose agent is {@code agentHostPid}, or null when this
     * host has no cgroup v2 hierarchy holding it with {@code cgroup.kill} (Linux 5.14 and later).
     */
    static ExecCgroups of(String sandboxId, long agentHostPid) {
        Path root = Cgroups.v2Root();
        if (root == null) {
            return null;
        }
        Path dir = root.resolve(Cgroups.PARENT).resolve(sandboxId);
        return Files.isRegularFile(dir.resolve("cgroup.kill")) ? new ExecCgroups(dir, agentHostPid) : null;
    }

    /**
     * Creates a cgroup for a new execution and moves its held process ({@code sandboxPid} in the
     * sandbox's pid namespace, a child of the agent) into it.
     */
    Path place(int sandboxPid) {
        sweep();
        long hostPid = hostPidOf(sandboxPid);
        Path cgroup = sandboxCgroup.resolve(PREFIX + next.getAndIncrement());
        try {
            Files.createDirectory(cgroup);
            try {
                Files.writeString(cgroup.resolve("cgroup.procs"), Long.toString(hostPid), StandardCharsets.US_ASCII);
            } catch (IOException e) {
                Files.deleteIfExists(cgroup);
                throw e;
            }
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot give the execution its own cgroup under " + sandboxCgroup + ": " + e.getMessage()
                    + " (the execution was not started)");
        }
        return cgroup;
    }

    /**
     * Kills every process of the execution's cgroup; the cgroup itself stays until {@link #release}.
     *
     * @return false if the kill could not be written (the caller falls back to the process group)
     */
    boolean kill(Path cgroup) {
        try {
            Files.writeString(cgroup.resolve("cgroup.kill"), "1", StandardCharsets.US_ASCII);
            return true;
        } catch (NoSuchFileException gone) {
            return true;    // released: nothing of the execution is left
        } catch (IOException e) {
            return false;
        }
    }

    /** The execution has ended: removes its cgroup, or keeps it for a later sweep while processes it left still run. */
    void release(Path cgroup) {
        if (!remove(cgroup)) {
            lingering.add(cgroup);
        }
    }

    /** Cgroups of ended executions that still hold processes. */
    int lingering() {
        return lingering.size();
    }

    /** Removes the cgroups of ended executions that have become empty since. */
    void sweep() {
        lingering.removeIf(ExecCgroups::remove);
    }

    private static boolean remove(Path cgroup) {
        try {
            Files.deleteIfExists(cgroup);
            return true;
        } catch (IOException busy) {
            return false;   // EBUSY: processes are still in it
        }
    }

    /**
     * The host pid of the agent's child that is {@code sandboxPid} in the sandbox. Children are
     * listed oldest first and the held one is new, so the list is searched from its end.
     */
    private long hostPidOf(int sandboxPid) {
        String children;
        try {
            children = Files.readString(Path.of("/proc", Long.toString(agentHostPid), "task", Long.toString(agentHostPid), "children"),
                    StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot list the processes of the sandbox's agent (host pid " + agentHostPid + "): "
                    + e.getMessage() + " (the execution was not started)");
        }
        List<String> pids = List.of(children.trim().split("\\s+"));
        String wanted = Integer.toString(sandboxPid);
        for (int i = pids.size() - 1; i >= 0; i--) {
            if (!pids.get(i).isEmpty() && wanted.equals(innermostPid(pids.get(i)))) {
                return Long.parseLong(pids.get(i));
            }
        }
        throw AirlockException.unavailable("the execution's process (pid " + sandboxPid + " in the sandbox) is not a child of the agent: "
                + "it was killed before it started");
    }

    /** The last field of the {@code NSpid:} line: the pid in the innermost (the sandbox's) namespace. */
    private static String innermostPid(String hostPid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", hostPid, "status"), StandardCharsets.US_ASCII)) {
                if (line.startsWith("NSpid:")) {
                    String[] fields = line.trim().split("\\s+");
                    return fields[fields.length - 1];
                }
            }
        } catch (IOException gone) {
            // exited since the list was read
        }
        return "";
    }
}
