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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Gives every execution of one sandbox its own cgroup below the sandbox's, so that a timeout or a
 * kill ends everything the execution started, whether it called setsid, double-forked or changed
 * its process group: in the cgroup v2 hierarchy (the whole tree on a v2 host, the unified mount of
 * a hybrid one) {@code cgroup.kill} does it in one write; on a host with cgroup v1 alone, the
 * execution's freezer cgroup is frozen (so nothing in it can fork), every process in it is sent
 * SIGKILL, and it is thawed.
 *
 * <p>The host, never the sandbox, creates the cgroup and moves the execution's first process into
 * it, while the agent holds that process before it execs (see {@code AgentClient.start} with an
 * {@code ExecPlacement}): all the execution's code is born inside. Nothing in the sandbox can leave
 * it: the sandbox has no cgroup filesystem (no {@code /sys}, no mount) and no capability.
 */
final class ExecCgroups {

    /** Each execution's cgroup is {@value #PREFIX}N under the sandbox's. */
    static final String PREFIX = "x";
    /** How long a v1 freezer may take to freeze an execution before its processes are killed anyway, and the freeze tried again. */
    static final long FREEZE_TIMEOUT_MILLIS = 1000;
    /** Freeze-and-kill rounds on v1 before giving up on processes that keep escaping a freeze. */
    static final int FREEZE_ROUNDS = 5;
    /** Reads of the agent's children list before a held child missing from it is taken for killed (see hostPidOf). */
    static final int CHILDREN_READS = 20;

    /** How an execution's processes are all killed. */
    enum Killer { CGROUP_KILL, FREEZER }

    private final Killer killer;
    private final Path sandboxCgroup;
    private final long agentHostPid;
    private final AtomicLong next = new AtomicLong(1);
    /** Cgroups of ended executions whose processes (daemons it left) still live; removed once empty. */
    private final Set<Path> lingering = ConcurrentHashMap.newKeySet();
    /** Whether a sweep started by {@link #release} is running. */
    private final AtomicBoolean sweeping = new AtomicBoolean();
    private final AtomicLong releases = new AtomicLong();

    private ExecCgroups(Killer killer, Path sandboxCgroup, long agentHostPid) {
        this.killer = killer;
        this.sandboxCgroup = sandboxCgroup;
        this.agentHostPid = agentHostPid;
    }

    /**
     * The execution cgroups of the sandbox whose agent is {@code agentHostPid}: with {@code
     * cgroup.kill} where a cgroup v2 hierarchy holds the sandbox (Linux 5.14 and later), else with
     * the v1 freezer; null when the host has neither.
     */
    static ExecCgroups of(String sandboxId, long agentHostPid) {
        Path root = Cgroups.v2Root();
        if (root != null) {
            Path dir = root.resolve(Cgroups.PARENT).resolve(sandboxId);
            if (Files.isRegularFile(dir.resolve("cgroup.kill"))) {
                return new ExecCgroups(Killer.CGROUP_KILL, dir, agentHostPid);
            }
        }
        return withFreezer(sandboxId, agentHostPid);
    }

    /** The v1 freezer variant, also for tests on hosts that have both. */
    static ExecCgroups withFreezer(String sandboxId, long agentHostPid) {
        Path dir = Cgroups.v1Hierarchy("freezer").resolve(Cgroups.PARENT).resolve(sandboxId);
        return Files.isRegularFile(dir.resolve("freezer.state")) ? new ExecCgroups(Killer.FREEZER, dir, agentHostPid) : null;
    }

    Killer killer() {
        return killer;
    }

    long agentHostPid() {
        return agentHostPid;
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
            if (killer == Killer.CGROUP_KILL) {
                Files.writeString(cgroup.resolve("cgroup.kill"), "1", StandardCharsets.US_ASCII);
                return true;
            }
            return freezeAndKill(cgroup);
        } catch (NoSuchFileException gone) {
            return true;    // released: nothing of the execution is left
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Frozen, no process of the cgroup can fork: the pids read then are all there is, and they
     * cannot be reused before they are killed. A freeze that does not complete in time (a process
     * in uninterruptible sleep) is followed by a kill of what is listed, and another round.
     */
    private boolean freezeAndKill(Path cgroup) throws IOException {
        Path state = cgroup.resolve("freezer.state");
        for (int round = 0; round < FREEZE_ROUNDS; round++) {
            Files.writeString(state, "FROZEN", StandardCharsets.US_ASCII);
            boolean frozen = awaitFrozen(state);
            List<String> pids = Files.readAllLines(cgroup.resolve("cgroup.procs"), StandardCharsets.US_ASCII);
            for (String pid : pids) {
                if (!pid.isBlank()) {
                    ProcessHandle.of(Long.parseLong(pid.trim())).ifPresent(ProcessHandle::destroyForcibly);
                }
            }
            Files.writeString(state, "THAWED", StandardCharsets.US_ASCII);
            if (frozen || pids.isEmpty()) {
                return true;
            }
        }
        return false;
    }

    private static boolean awaitFrozen(Path state) throws IOException {
        long deadline = System.nanoTime() + FREEZE_TIMEOUT_MILLIS * 1_000_000;
        while (!Files.readString(state, StandardCharsets.US_ASCII).trim().equals("FROZEN")) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /**
     * The execution has ended: its cgroup is removed on a thread of its own, or kept for a later
     * sweep while processes it left still run. Not here: a removal waits for the kernel's cgroup
     * lock, which a move into a cgroup (a spare being placed) holds for an RCU grace period, and
     * the execution's answer must not wait for that.
     */
    void release(Path cgroup) {
        lingering.add(cgroup);
        releases.incrementAndGet();
        if (sweeping.compareAndSet(false, true)) {
            Thread.ofVirtual().name("airlock-exec-cgroup-sweep").start(this::sweepReleased);
        }
    }

    /** Sweeps until no release came in while it swept (one that came then found this sweep running, and left it to it). */
    private void sweepReleased() {
        long seen;
        do {
            seen = releases.get();
            try {
                sweep();
            } finally {
                sweeping.set(false);
            }
        } while (releases.get() != seen && sweeping.compareAndSet(false, true));
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
     * listed oldest first and the held one is new, so the list is searched from its end. The kernel's
     * list can miss a child while others exit (proc(5): reliable only while no child is created or
     * exits; reading it resumes by position, and an exit shifts the positions): the held child cannot
     * exit by itself (it waits for the host), so a list without it is read again, up to
     * {@link #CHILDREN_READS} times, before the child is taken for killed.
     */
    private long hostPidOf(int sandboxPid) {
        String wanted = Integer.toString(sandboxPid);
        for (int read = 0; read < CHILDREN_READS; read++) {
            String children;
            try {
                children = Files.readString(Path.of("/proc", Long.toString(agentHostPid), "task", Long.toString(agentHostPid), "children"),
                        StandardCharsets.US_ASCII);
            } catch (IOException e) {
                throw AirlockException.unavailable("cannot list the processes of the sandbox's agent (host pid " + agentHostPid + "): "
                        + e.getMessage() + " (the execution was not started)");
            }
            List<String> pids = List.of(children.trim().split("\\s+"));
            for (int i = pids.size() - 1; i >= 0; i--) {
                if (!pids.get(i).isEmpty() && wanted.equals(innermostPid(pids.get(i)))) {
                    return Long.parseLong(pids.get(i));
                }
            }
            Thread.onSpinWait();
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
