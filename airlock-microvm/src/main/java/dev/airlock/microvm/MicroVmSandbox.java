package dev.airlock.microvm;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.AirlockException;
import dev.airlock.core.IsolationDriver.DriverSandbox;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageStore;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

/**
 * One sandbox of the microVM driver: its host directory, its image, and the guest that runs it
 * ({@link MicroVmDriver.Guest}: the jailed QEMU, the channel to its agent, its egress bridge,
 * QEMU's QMP socket and the guest init's control port), which is none while it is paused to disk.
 */
final class MicroVmSandbox implements DriverSandbox {

    private final SandboxId id;
    /** Its guest; null while paused to disk. */
    private volatile MicroVmDriver.Guest guest;
    /** The agent's connection: a new one after each {@link #checkpoint}, and the last one kept while paused to disk. */
    private volatile AgentClient agent;
    /** Where its guest is saved while paused to disk; null otherwise. */
    private volatile Path suspended;
    private final Path dir;
    private final ImageStore.Lease image;
    private final SandboxSpec spec;
    private final MicroVmDriver driver;
    private final AtomicBoolean destroyed = new AtomicBoolean();

    MicroVmSandbox(SandboxId id, MicroVmDriver.Guest guest, Path dir, ImageStore.Lease image, SandboxSpec spec, MicroVmDriver driver) {
        this.id = id;
        this.guest = guest;
        this.agent = guest.agent();
        this.dir = dir;
        this.image = image;
        this.spec = spec;
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

    AgentClient agentClient() {
        return agent;
    }

    /** Takes the agent's connection again after a snapshot made it let go (RESUME). */
    void reconnected(AgentClient client) {
        this.agent = client;
    }

    /** Its running guest; null while paused to disk. */
    MicroVmDriver.Guest guest() {
        return guest;
    }

    /** The running guest, or the reason there is none. */
    private MicroVmDriver.Guest running() {
        MicroVmDriver.Guest g = guest;
        if (g == null) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + id + " is paused to disk: resume it first");
        }
        return g;
    }

    VmmJail jail() {
        return running().jail();
    }

    Qmp qmp() {
        return running().qmp();
    }

    /** Whether its guest has an egress bridge (the sandbox's network policy named destinations). */
    boolean bridged() {
        return running().egress() != null;
    }

    /** Whether QEMU exported the run directory's public files to the guest (its device list has that 9p device). */
    boolean hadRunFiles() {
        return running().runFiles();
    }

    Path dir() {
        return dir;
    }

    /** The stored image it holds, or null (the image 'system'). */
    ImageStore.Lease image() {
        return image;
    }

    SandboxSpec spec() {
        return spec;
    }

    Path suspended() {
        return suspended;
    }

    void suspended(Path saved) {
        this.suspended = saved;
        this.guest = null;
    }

    /** Takes the guest restored from what was saved when it paused to disk. */
    void woken(MicroVmDriver.Guest restored) {
        this.agent = restored.agent();
        this.guest = restored;
        this.suspended = null;
    }

    /**
     * The guest's RAM as the host reaches it: QEMU's shared memory file, through its descriptor in
     * /proc (QEMU runs in a pid namespace of its own; its host pid is a descendant of the jail's).
     */
    Path ramOfQemu() throws IOException {
        ProcessHandle vmm = running().qemu().descendants()
                .filter(p -> p.info().command().map(c -> c.endsWith("/" + Qemu.BINARY)).orElse(false))
                .findFirst().orElseThrow(() -> new IOException("the QEMU process of sandbox " + id + " is gone"));
        Path fds = Path.of("/proc", Long.toString(vmm.pid()), "fd");
        try (Stream<Path> all = Files.list(fds)) {
            for (Path fd : all.toList()) {
                try {
                    if (Files.readSymbolicLink(fd).toString().startsWith("/memfd:memory-backend-memfd")) {
                        return fd;
                    }
                } catch (IOException e) {
                    // closed while we looked
                }
            }
        }
        throw new IOException("QEMU of sandbox " + id + " has no shared memory file for its RAM");
    }

    @Override
    public String imageDigest() {
        return image == null ? null : image.digest();
    }

    @Override
    public java.util.Map<String, String> imageEnvironment() {
        return image == null ? java.util.Map.of() : image.environment();
    }

    /** The guest kernel's OOM kills, as its console reports them (none counted while paused to disk). */
    @Override
    public long oomKills() {
        MicroVmDriver.Guest g = guest;
        return g == null ? 0 : g.console().oomKills();
    }

    /** Freezes the guest's QEMU (its cgroup freezer): every process of the guest stops with it. */
    @Override
    public void pause() {
        running().jail().freeze(true);
    }

    @Override
    public void resume() {
        running().jail().freeze(false);
    }

    /** The guest's memory, processes and files, saved into {@code dir} ({@link GuestSnapshot}); it goes on after. */
    @Override
    public void checkpoint(Path dir) {
        GuestSnapshot.take(this, dir);
    }

    /** Saves the guest into {@code dir} and stops it: the sandbox holds no memory until {@link #wake}. */
    @Override
    public void suspend(Path dir) {
        driver.suspend(this, dir);
    }

    @Override
    public void wake() {
        driver.wake(this);
    }

    @Override
    public void destroy() {
        if (destroyed.compareAndSet(false, true)) {
            driver.destroy(this);
        }
    }
}
