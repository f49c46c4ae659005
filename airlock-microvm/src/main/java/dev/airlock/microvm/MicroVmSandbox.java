package dev.airlock.microvm;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.IsolationDriver.DriverSandbox;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxId;
import dev.airlock.oci.image.ImageStore;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/** One running guest: its jailed QEMU process, its host directory, the channel to its agent and its egress bridge. */
final class MicroVmSandbox implements DriverSandbox {

    private final SandboxId id;
    private final AgentClient agent;
    private final Process qemu;
    private final VmmJail jail;
    private final GuestConsole console;
    private final EgressMux egress;
    private final Path dir;
    private final ImageStore.Lease image;
    private final MicroVmDriver driver;
    private final AtomicBoolean destroyed = new AtomicBoolean();

    MicroVmSandbox(SandboxId id, AgentClient agent, Process qemu, VmmJail jail, GuestConsole console, EgressMux egress, Path dir,
                   ImageStore.Lease image, MicroVmDriver driver) {
        this.id = id;
        this.agent = agent;
        this.qemu = qemu;
        this.jail = jail;
        this.console = console;
        this.egress = egress;
        this.dir = dir;
        this.image = image;
        this.driver = driver;
    }

    @Override
    public SandboxId id() {
        return id;
    }

    @Override
    public SandboxAgent agent() {
        return agent;
    }

    Process qemu() {
        return qemu;
    }

    VmmJail jail() {
        return jail;
    }

    GuestConsole console() {
        return console;
    }

    /** The host end of the guest's egress bridge, or null when the sandbox has no network. */
    EgressMux egress() {
        return egress;
    }

    Path dir() {
        return dir;
    }

    /** The stored image it holds, or null (the image 'system'). */
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

    /** The guest kernel's OOM kills, as its console reports them. */
    @Override
    public long oomKills() {
        return console.oomKills();
    }

    /** Freezes the guest's QEMU (its cgroup freezer): every process of the guest stops with it. */
    @Override
    public void pause() {
        jail.freeze(true);
    }

    @Override
    public void resume() {
        jail.freeze(false);
    }

    @Override
    public void destroy() {
        if (destroyed.compareAndSet(false, true)) {
            driver.destroy(this);
        }
    }
}
