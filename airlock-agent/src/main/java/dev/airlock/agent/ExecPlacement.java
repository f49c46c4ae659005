package dev.airlock.agent;

/**
 * Puts a held execution's first process, its supervisor, where the host wants it (its own cgroup)
 * after the agent forked it and before it may fork the command: everything it will start is then born there, and
 * no code of the execution ever ran outside. See {@link AgentClient#start(dev.airlock.core.ExecRequest,
 * dev.airlock.core.OutputListener, ExecPlacement)}.
 */
@FunctionalInterface
public interface ExecPlacement {

    /**
     * Places the forked supervisor, which is {@code sandboxPid} in the sandbox's pid namespace. Throwing
     * refuses the execution: the process is then ended without running anything, and the exception
     * reaches the caller of {@code start}. Called on the client's reader thread, which reads nothing
     * else meanwhile: keep it short, and never wait on the client from it.
     */
    void place(int sandboxPid);
}
