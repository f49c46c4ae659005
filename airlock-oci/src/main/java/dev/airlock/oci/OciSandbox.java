package dev.airlock.oci;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.HostFiles;
import dev.airlock.core.IsolationDriver.DriverSandbox;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxId;
import dev.airlock.oci.image.ImageStore;

import java.util.concurrent.atomic.AtomicBoolean;

/** One running container and the channel to its agent. */
final class OciSandbox implements DriverSandbox {

    private final SandboxId id;
    /** The agent's connection: a new one after each {@link #checkpoint}. */
    private volatile AgentClient agentClient;
    /** The agent as executions see it: with a cgroup of their own each, where the host has cgroup v2. */
    private volatile SandboxAgent agent;
    private final ExecCgroups execCgroups;
    private final OciDriver driver;
    private final long hostIdBase;
    /** The stored image this sandbox holds, released when it is destroyed; null for the system image. */
    private final ImageStore.Lease image;
    private final AtomicBoolean destroyed = new AtomicBoolean();

    OciSandbox(SandboxId id, AgentClient agent, ExecCgroups execCgroups, OciDriver driver, long hostIdBase, ImageStore.Lease image) {
        this.id = id;
        this.execCgroups = execCgroups;
        reconnected(agent);
        this.driver = driver;
        this.hostIdBase = hostIdBase;
        this.image = image;
    }

    /** Takes the agent's new connection, after a checkpoint made it let go of the old one. */
    void reconnected(AgentClient client) {
        this.agentClient = client;
        if (execCgroups == null) {
            this.agent = client;
        } else {
            this.agent = new CgroupedAgent(client, execCgroups);
        }
    }

    /** A pooled sandbox's first spare supervisor, placed before its run comes (a sandbox not pooled makes it at its first execution). */
    @Override
    public void prepareForUse() {
        if (agent instanceof CgroupedAgent cgrouped) {
            cgrouped.prepareFirstSpare();
        }
    }

    /** The stored image it holds, or null (the system image). */
    ImageStore.Lease image() {
        return image;
    }

    @Override
    public String imageDigest() {
        return image == null ? null : image.digest();
    }

    @Override
    public java.util.Map<String, String> imageEnvironment() {
        return image == null ? java.util.Map.of() : image.environment();
    }

    /** The host id that this sandbox's uid 0 maps to; its own range of 65536. */
    long hostIdBase() {
        return hostIdBase;
    }

    @Override
    public SandboxId id() {
        return id;
    }

    @Override
    public SandboxAgent agent() {
        return agent;
    }

    /** The agent without per-execution cgroups, for tests that compare the two. */
    AgentClient agentClient() {
        return agentClient;
    }

    /** This sandbox's execution cgroups, or null where the host has no cgroup v2 with cgroup.kill. */
    ExecCgroups execCgroups() {
        return execCgroups;
    }

    @Override
    public long oomKills() {
        return driver.oomKills(id);
    }

    @Override
    public void pause() {
        driver.freeze(this, true);
    }

    @Override
    public void resume() {
        driver.freeze(this, false);
    }

    @Override
    public void checkpoint(java.nio.file.Path dir) {
        driver.checkpoint(this, dir);
    }

    /** Where its processes are saved while it is paused to disk ({@link #suspend}); null while they run. */
    private volatile java.nio.file.Path suspended;

    java.nio.file.Path suspended() {
        return suspended;
    }

    @Override
    public dev.airlock.core.IsolationDriver.Usage usage() {
        return suspended != null ? null : Cgroups.usage(id.value());
    }

    @Override
    public void suspend(java.nio.file.Path dir) {
        driver.suspend(this, dir);
        suspended = dir;
    }

    @Override
    public void wake() {
        java.nio.file.Path dir = suspended;
        if (dir != null) {
            driver.wake(this, dir);
            suspended = null;
            HostFiles.deleteTree(dir);
        }
    }

    @Override
    public void destroy() {
        if (destroyed.compareAndSet(false, true)) {
            driver.destroy(this);
        }
    }
}
