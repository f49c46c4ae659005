package dev.airlock.microvm;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.AirlockException;
import dev.airlock.core.IsolationDriver.DriverSandbox;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageStore;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

/**
 * One running guest: its jailed QEMU process, its host directory, the channel to its agent, its
 * egress bridge, QEMU's QMP socket and the guest init's control port.
 */
final class MicroVmSandbox implements DriverSandbox {

    private final SandboxId id;
    /** The agent's connection: a new one after each {@link #checkpoint}. */
    private volatile AgentClient agent;
    private final Process qemu;
    private final VmmJail jail;
    private final GuestConsole console;
    private final EgressMux egress;
    private final Qmp qmp;
    private final SocketChannel control;
    private final Path dir;
    private final ImageStore.Lease image;
    private final SnapshotRam ram;
    private final SandboxSpec spec;
    private final MicroVmDriver driver;
    private final AtomicBoolean destroyed = new AtomicBoolean();

    MicroVmSandbox(SandboxId id, AgentClient agent, Process qemu, VmmJail jail, GuestConsole console, EgressMux egress, Qmp qmp,
                   SocketChannel control, Path dir, ImageStore.Lease image, SnapshotRam ram, SandboxSpec spec, MicroVmDriver driver) {
        this.id = id;
        this.agent = agent;
        this.qemu = qemu;
        this.jail = jail;
        this.console = console;
        this.egress = egress;
        this.qmp = qmp;
        this.control = control;
        this.dir = dir;
        this.image = image;
        this.ram = ram;
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

    Qmp qmp() {
        return qmp;
    }

    SocketChannel control() {
        return control;
    }

    Path dir() {
        return dir;
    }

    /** The stored image it holds, or null (the image 'system'). */
    ImageStore.Lease image() {
        return image;
    }

    /** The snapshot RAM it was restored from, or null (booted). */
    SnapshotRam ram() {
        return ram;
    }

    SandboxSpec spec() {
        return spec;
    }

    /** Whether QEMU exported the run directory's public files to the guest (its device list has that 9p device). */
    boolean hadRunFiles() {
        try (Stream<Path> files = Files.list(dir.resolve("run"))) {
            return files.anyMatch(f -> Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS));
        } catch (IOException e) {
            throw AirlockException.internal("cannot read the run directory of sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    /**
     * The guest's RAM as the host reaches it: QEMU's shared memory file, through its descriptor in
     * /proc (QEMU runs in a pid namespace of its own; its host pid is a descendant of the jail's).
     */
    Path ramOfQemu() throws IOException {
        ProcessHandle vmm = qemu.descendants().filter(p -> p.info().command().map(c -> c.endsWith("/" + Qemu.BINARY)).orElse(false))
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

    /** The guest's memory, processes and files, saved into {@code dir} ({@link GuestSnapshot}); it goes on after. */
    @Override
    public void checkpoint(Path dir) {
        GuestSnapshot.take(this, dir);
    }

    @Override
    public void destroy() {
        if (destroyed.compareAndSet(false, true)) {
            driver.destroy(this);
        }
    }
}
