package dev.airlock.oci;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.IsolationDriver.DriverSandbox;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxId;

import java.util.concurrent.atomic.AtomicBoolean;

/** One running container and the channel to its agent. */
final class OciSandbox implements DriverSandbox {

    private final SandboxId id;
    private final AgentClient agent;
    private final OciDriver driver;
    private final long hostIdBase;
    private final AtomicBoolean destroyed = new AtomicBoolean();

    OciSandbox(SandboxId id, AgentClient agent, OciDriver driver, long hostIdBase) {
        this.id = id;
        this.agent = agent;
        this.driver = driver;
        this.hostIdBase = hostIdBase;
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

    @Override
    public long oomKills() {
        return driver.oomKills(id);
    }

    @Override
    public void destroy() {
        if (destroyed.compareAndSet(false, true)) {
            driver.destroy(this);
        }
    }
}
