package dev.airlock.microvm;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.AirlockException;
import dev.airlock.core.EngineInstance;
import dev.airlock.core.HostFiles;
import dev.airlock.core.HostInputs;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxBroker;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The microVM isolation driver: each sandbox is a QEMU guest with its own Linux kernel (Debian's,
 * {@link GuestKernel}), booted from an initramfs ({@link GuestImage}) whose init starts the same
 * Airlock agent as the OCI driver's containers, as the guest's unprivileged sandbox user. The host
 * reaches the agent through a virtio-serial port whose host end is a unix socket in the guest's
 * own directory; the guest has no network device at all.
 *
 * <p>This host has no usable KVM, so guests run under QEMU's software emulation (TCG): a boot
 * takes seconds, not milliseconds. A sandbox with a network policy gets the egress bridge over a
 * second virtio-serial port ({@link EgressMux}). Inputs, checked as the OCI driver checks them
 * ({@link HostInputs}), are bound into QEMU's jail and exported to the guest read-only over 9p,
 * which mounts them at /inputs.
 * QEMU runs jailed ({@link VmmJail}): its own uid, namespaces and cgroups, with seccomp; the
 * sandbox's memory and cpu limits become the guest's RAM and vCPUs.
 */
public final class MicroVmDriver implements IsolationDriver {

    private static final Logger LOG = LoggerFactory.getLogger(MicroVmDriver.class);
    static final String SOCKET_NAME = "agent.sock";
    /** The parent cgroup of every guest's QEMU's cgroups ({@code <parent>/<sandbox id>} in each hierarchy). */
    public static final String CGROUP_PARENT = VmmJail.CGROUP_PARENT;
    /** The console's socket: shorter than {@link #SOCKET_NAME}, which so bounds the state root's length. */
    static final String CONSOLE_SOCKET = "tty.sock";
    /** The egress bridge's port's socket (shorter than {@link #SOCKET_NAME} too). */
    static final String EGRESS_SOCKET = "egr.sock";
    /** QEMU's QMP socket (the host stops, saves and continues the guest through it). */
    static final String QMP_SOCKET = "qmp.sock";
    /** The guest init's control port's socket ({@link GuestSnapshot#reseed}). */
    static final String CTL_SOCKET = "ctl.sock";
    /** Where a restored guest's QEMU takes its saved state in, and where a snapshot's QEMU sends it out: the host listens there. */
    static final String INCOMING_SOCKET = "in.sock";
    static final String OUTGOING_SOCKET = "out.sock";
    static final String QEMU_LOG = "qemu.log";
    /** The guest directory's subdirectory that its jailed QEMU owns and sees: its sockets. */
    static final String VMM_DIR = "vmm";
    private static final int CONSOLE_TAIL_LINES = 12;
    private static final long KILL_WAIT_SECONDS = 10;

    private final MicroVmDriverConfig config;
    private final Path qemuBinary;
    private final GuestKernel kernel;
    private final EngineInstance state;
    private final Path initramfs;
    private final HostInputs hostInputs;
    private final ImageStore images;
    private final Map<SandboxId, MicroVmSandbox> live = new ConcurrentHashMap<>();
    /** The saved booted guest of each spec the warm pool asked for ({@link #createForPool}): image and limits to its directory. */
    private final Map<String, Path> bootSnapshots = new ConcurrentHashMap<>();
    /** The sealed RAM of each snapshot some live guest was restored from ({@link #snapshotRam}). */
    private final Map<String, SnapshotRam> rams = new java.util.HashMap<>();

    public MicroVmDriver(MicroVmDriverConfig config) {
        this.config = config;
        this.qemuBinary = Qemu.find();
        this.kernel = GuestKernel.prepare(config.cacheDir());
        Set<Path> keptFromInputs = new HashSet<>(config.protectedPaths());
        keptFromInputs.add(config.stateRoot());
        this.hostInputs = new HostInputs(keptFromInputs);
        this.images = ImageStore.at(config.imageRoot());
        this.state = InstanceDirectory.create(config.stateRoot());
        try {
            this.initramfs = state.dir().resolve("initramfs.cpio.gz");
            GuestImage.write(kernel, Path.of("/"), initramfs);
            // read by each guest's jailed QEMU; it holds nothing secret (the agent, the init, an /etc with no accounts)
            Files.setPosixFilePermissions(initramfs, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        } catch (IOException e) {
            state.close();
            throw new UncheckedIOException(e);
        } catch (RuntimeException | Error e) {
            state.close();
            throw e;
        }
    }

    @Override
    public String name() {
        return "microvm/qemu-" + config.accelerator();
    }

    @Override
    public Isolation isolation() {
        return Isolation.MICROVM;
    }

    @Override
    public String instance() {
        return state.name();
    }

    /** The guest kernel's release, such as {@code 6.1.0-57-amd64}. */
    public String guestKernelRelease() {
        return kernel.release();
    }

    /** The images of the store ({@link MicroVmDriverConfig#imageRoot()}), which guests start from as read-only disks. */
    @Override
    public List<dev.airlock.core.ImageInfo> images() {
        return images.list();
    }

    @Override
    public void check(SandboxSpec spec, List<String> requiredPrograms) {
        hostInputs.resolve(spec.inputs());
        if (!SandboxSpec.SYSTEM_IMAGE.equals(spec.image())) {
            images.requireExecutables(spec.image(), requiredPrograms);
            return;
        }
        for (String program : requiredPrograms) {
            if (!hasExecutable(program)) {
                throw AirlockException.unavailable("the image 'system' has no '" + program
                        + "': install it on the host under /usr (apt-get install), or choose another language");
            }
        }
    }

    /** Whether {@code program} is on the guest's PATH: the guest sees the host's /usr, without /usr/local. */
    private static boolean hasExecutable(String program) {
        for (String dir : List.of("/usr/bin", "/usr/sbin")) {
            Path candidate = Path.of(dir, program);
            try {
                if (Files.isRegularFile(candidate) && Files.isExecutable(candidate) && !candidate.toRealPath().startsWith("/usr/local")) {
                    return true;
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return false;
    }

    @Override
    public DriverSandbox create(SandboxId id, SandboxSpec spec, SandboxBroker broker) {
        return start(id, spec, broker, null);
    }

    /**
     * A guest whose processes and memory continue from the memory snapshot {@code checkpoint} took
     * ({@link MicroVmSandbox#checkpoint}): QEMU restored from its saved state, its RAM the snapshot's
     * mapped copy-on-write ({@link SnapshotRam}), its kernel's random state reseeded and its clock
     * stepped to the host's by the guest init's control process, then its agent taken up (RESUME).
     */
    @Override
    public DriverSandbox restore(SandboxId id, SandboxSpec spec, SandboxBroker broker, Path checkpoint) {
        return start(id, spec, broker, GuestSnapshot.read(checkpoint));
    }

    /**
     * A guest for the warm pool: restored from the booted guest this driver saved for the same spec
     * ({@link #bootSnapshots}) instead of booted, when the spec's image is a stored one (its guest can
     * be saved) and it has no inputs. The first of each spec boots, is saved right after its agent's
     * HELLO (before any code of a sandbox ran in it: what is saved is the image's guest as booted) and
     * is handed out itself; later ones are restores, each reseeded and with its clock stepped as any
     * restore. A restore that fails (the image's name now names another tree, say) drops the saved
     * guest: the next one boots and is saved again.
     */
    @Override
    public DriverSandbox createForPool(SandboxId id, SandboxSpec spec, SandboxBroker broker) {
        if (SandboxSpec.SYSTEM_IMAGE.equals(spec.image()) || !spec.inputs().isEmpty()) {
            return create(id, spec, broker);
        }
        String key = spec.image() + "\n" + spec.limits();
        Path saved = bootSnapshots.get(key);
        if (saved != null) {
            try {
                return start(id, spec, broker, GuestSnapshot.read(saved));
            } catch (AirlockException e) {
                // the sandbox is attached to its broker by now and cannot be made again here: the pool's next one boots
                LOG.info("the pool's guest of '{}' could not be restored ({}): the next one boots", spec.image(), e.getMessage());
                if (bootSnapshots.remove(key, saved)) {
                    HostFiles.deleteTree(saved);
                }
                throw e;
            }
        }
        MicroVmSandbox booted = (MicroVmSandbox) start(id, spec, broker, null);
        try {
            Path dir = Files.createDirectories(state.dir().resolve("boot-snapshots")).resolve(id.value());
            Files.createDirectory(dir);
            GuestSnapshot.take(booted, dir);
            Path before = bootSnapshots.put(key, dir);
            if (before != null) {
                HostFiles.deleteTree(before);     // guests restored from it keep their RAM: the sealed copy is theirs
            }
        } catch (IOException | AirlockException e) {
            LOG.info("the pool's guest of '{}' could not be saved ({}): each will boot", spec.image(), e.getMessage());
        }
        return booted;
    }

    /** Boots a guest, or restores one from {@code snapshot} when it is not null. */
    private DriverSandbox start(SandboxId id, SandboxSpec spec, SandboxBroker broker, GuestSnapshot snapshot) {
        List<HostInputs.Resolved> inputs = hostInputs.resolve(spec.inputs());
        Path dir = state.sandboxDir(id.value());
        ImageStore.Lease image = null;
        SnapshotRam ram = null;
        try {
            Path disk = null;
            if (!SandboxSpec.SYSTEM_IMAGE.equals(spec.image())) {
                image = images.useRequested(spec.image());
                disk = GuestDisks.diskOf(images, image);
            }
            if (snapshot != null) {
                snapshot.check(spec, image, !inputs.isEmpty());
                ram = snapshotRam(snapshot);
            }
            InstanceDirectory.createPrivate(dir);
            Path runDir = dir.resolve("run");
            InstanceDirectory.createPrivate(runDir);
            // The run directory is not shared into the guest as it is: the broker's egress socket is reached by this
            // host's end of the guest's egress port (EgressMux), and is for the driver (root) alone: QEMU's uid neither
            // sees nor may use it. Its public files (the egress trust bundle) are exported read-only; the guest init copies
            // them into its /run/airlock.
            boolean bridged = broker.attach(id, spec, runDir, 0).bridged();
            Guest guest = launch(id, spec, dir, inputs, disk, bridged, snapshot, ram);
            MicroVmSandbox sandbox = new MicroVmSandbox(id, guest, dir, image, spec, this);
            live.put(id, sandbox);
            return sandbox;
        } catch (IOException | RuntimeException | Error e) {
            HostFiles.deleteTree(dir);
            if (image != null) {
                image.close();
            }
            if (ram != null) {
                released(ram);
            }
            if (e instanceof AirlockException ae) {
                throw ae;
            }
            if (e instanceof Error error) {
                throw error;
            }
            throw new AirlockException(AirlockException.Kind.UNAVAILABLE, "cannot start sandbox " + id + ": " + e.getMessage(), e);
        }
    }

    /**
     * What runs one guest: its jailed QEMU, booted or (when {@code snapshot} is not null) restored
     * with {@code ram}, and the host's ends of its ports, for the sandbox directory {@code dir} whose
     * run directory the broker attached. On failure whatever it started is stopped again; {@code dir},
     * the image and {@code ram} stay the caller's.
     */
    private Guest launch(SandboxId id, SandboxSpec spec, Path dir, List<HostInputs.Resolved> inputs, Path disk, boolean bridged,
                         GuestSnapshot snapshot, SnapshotRam ram) throws IOException {
        Process qemu = null;
        VmmJail jail = null;
        GuestConsole console = null;
        EgressMux egress = null;
        Qmp qmp = null;
        SocketChannel control = null;
        try {
            jail = VmmJail.create(config.stateRoot(), id.value(), Qemu.guestMemoryBytes(spec.limits()), spec.limits());
            // The one directory QEMU may write, its uid's: it makes the agent's and the console's sockets there. The rest
            // of the guest's directory (qemu.log, the broker's run directory) stays root's, out of QEMU's sight.
            Path vmmDir = dir.resolve(VMM_DIR);
            InstanceDirectory.createPrivate(vmmDir);
            Files.setAttribute(vmmDir, "unix:uid", (int) jail.uid());
            Files.setAttribute(vmmDir, "unix:gid", (int) jail.uid());
            InstanceDirectory.createPrivate(dir.resolve(VmmJail.ROOT_MOUNT));
            Path runDir = dir.resolve("run");
            List<VmmJail.Share> shares = new ArrayList<>(inputs.stream().map(VmmJail.Share::input).toList());
            List<VmmJail.Share> runFiles = publicFiles(runDir).stream().map(VmmJail.Share::runFile).toList();
            shares.addAll(runFiles);
            if (disk != null) {
                shares.add(VmmJail.Share.disk(disk));
            }
            if (snapshot != null) {
                snapshot.checkDevices(bridged, !runFiles.isEmpty());
            }
            long started = System.nanoTime();
            long deadline = started + config.startTimeout().toNanos();
            qemu = new ProcessBuilder(jail.wrap(Qemu.command(qemuBinary, config.accelerator(), kernel, initramfs, spec.limits(), vmmDir,
                    disk == null ? null : Qemu.DISK_DIR + "/" + disk.getFileName(), snapshot != null, bridged, !inputs.isEmpty(),
                    !runFiles.isEmpty()),
                    config.accelerator(), kernel.vmlinux(), initramfs, vmmDir, dir.resolve(VmmJail.ROOT_MOUNT), shares,
                    ram == null ? null : ram.path()))
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve(QEMU_LOG).toFile())
                    .start();
            // QEMU waits for the console's reader before it starts the guest: not a byte of the boot is lost.
            SocketChannel consoleChannel = connect(id, qemu, dir, CONSOLE_SOCKET, deadline, null);
            Files.deleteIfExists(vmmDir.resolve(CONSOLE_SOCKET));
            console = new GuestConsole(consoleChannel, id.value());
            qmp = Qmp.open(connect(id, qemu, dir, QMP_SOCKET, deadline, console), Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            Files.deleteIfExists(vmmDir.resolve(QMP_SOCKET));
            control = connect(id, qemu, dir, CTL_SOCKET, deadline, console);
            Files.deleteIfExists(vmmDir.resolve(CTL_SOCKET));
            // The egress port before the agent's: the agent opens it before its HELLO, and a port with no host end hangs up.
            if (bridged) {
                SocketChannel egressChannel = connect(id, qemu, dir, EGRESS_SOCKET, deadline, console);
                Files.deleteIfExists(vmmDir.resolve(EGRESS_SOCKET));
                egress = new EgressMux(egressChannel, runDir.resolve(SandboxBroker.BRIDGE_SOCKET), id.value());
            }
            SocketChannel channel = connect(id, qemu, dir, SOCKET_NAME, deadline, console);
            // The socket file goes at once: no other host process can reach the guest's port.
            Files.deleteIfExists(vmmDir.resolve(SOCKET_NAME));
            AgentClient agent;
            try {
                if (snapshot != null) {
                    // every port's host end is connected before the guest runs again: its agent never reads end of file
                    long connected = System.nanoTime();
                    snapshot.restoreInto(qmp, vmmDir.resolve(INCOMING_SOCKET), deadline);
                    long loaded = System.nanoTime();
                    GuestSnapshot.reseed(control, deadline);
                    long reseeded = System.nanoTime();
                    agent = AgentClient.resume(channel, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                    LOG.info("sandbox {}: restored from a memory snapshot in {} ms (QEMU started and connected {} ms, state loaded {} ms,"
                            + " reseeded {} ms, agent resumed {} ms)", id, (System.nanoTime() - started) / 1_000_000,
                            (connected - started) / 1_000_000, (loaded - connected) / 1_000_000, (reseeded - loaded) / 1_000_000,
                            (System.nanoTime() - reseeded) / 1_000_000);
                } else {
                    agent = AgentClient.connect(channel, Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
                    LOG.debug("guest of sandbox {} booted in {} ms", id, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
                }
            } catch (IOException e) {
                throw bootFailure(id, qemu, dir, console, (snapshot == null ? "its agent did not say hello (" : "its restore failed (")
                        + e.getMessage() + ")");
            }
            return new Guest(agent, qemu, jail, console, egress, qmp, control, ram, !runFiles.isEmpty());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            new Guest(null, qemu, jail, console, egress, qmp, control, null, false).stop();
            throw AirlockException.unavailable("interrupted while sandbox " + id + " started");
        } catch (IOException | RuntimeException | Error e) {
            new Guest(null, qemu, jail, console, egress, qmp, control, null, false).stop();
            throw e;
        }
    }

    /** The sealed memory file of a snapshot's RAM, loaded once and shared by every guest restored from it while one lives. */
    private SnapshotRam snapshotRam(GuestSnapshot snapshot) throws IOException {
        synchronized (rams) {
            SnapshotRam ram = rams.get(snapshot.key());
            if (ram != null && ram.retain()) {
                return ram;
            }
            ram = SnapshotRam.load(snapshot.ramFile(), snapshot.memoryBytes());
            ram.retain();              // the guest's; the first reference is the cache's, dropped below once no guest uses it
            rams.put(snapshot.key(), ram);
            return ram;
        }
    }

    /** A guest restored from {@code ram} is gone: the cache lets go of the memory file once no guest uses it. */
    void released(SnapshotRam ram) {
        synchronized (rams) {
            ram.release();
            if (ram.users() == 1) {
                rams.values().remove(ram);
                ram.release();
            }
        }
    }

    static void closeQuietly(java.io.Closeable c) {
        if (c != null) {
            try {
                c.close();
            } catch (IOException ignored) {
                // being torn down: nothing to tell
            }
        }
    }

    /** The regular files the broker wrote into the run directory (public by its contract: a trust bundle), not its sockets. */
    private static List<Path> publicFiles(Path runDir) throws IOException {
        try (var files = Files.list(runDir)) {
            return files.filter(f -> Files.isRegularFile(f, java.nio.file.LinkOption.NOFOLLOW_LINKS)).sorted().toList();
        }
    }

    /** Connects to the socket {@code name} QEMU listens on in {@code dir}, once QEMU has made it. */
    private SocketChannel connect(SandboxId id, Process qemu, Path dir, String name, long deadline, GuestConsole console)
            throws InterruptedException {
        Path socket = dir.resolve(VMM_DIR).resolve(name);
        while (true) {
            if (!qemu.isAlive()) {
                throw bootFailure(id, qemu, dir, console, "QEMU exited");
            }
            if (Files.exists(socket)) {
                try {
                    return SocketChannel.open(UnixDomainSocketAddress.of(socket));
                } catch (IOException e) {
                    // QEMU made the file but does not listen yet
                }
            }
            if (System.nanoTime() > deadline) {
                throw bootFailure(id, qemu, dir, console, "QEMU did not open its socket " + name);
            }
            Thread.sleep(10);
        }
    }

    /** A failed boot, with what QEMU and the guest's console said: the guest's own words are all there is to go on. */
    private AirlockException bootFailure(SandboxId id, Process qemu, Path dir, GuestConsole console, String what) {
        String status = qemu.isAlive() ? "QEMU still running" : "QEMU exit status " + qemu.exitValue();
        return AirlockException.unavailable("the microVM of sandbox " + id + " did not start within " + config.startTimeout().toSeconds()
                + "s: " + what + " (" + status + "; " + (config.accelerator().equals(MicroVmDriverConfig.KVM)
                ? "under KVM: a KVM that hangs guests is best left for the tcg accelerator, as airlock doctor tells"
                : "under software emulation (TCG) a busy host boots slowly: the driver's startTimeout sets the bound")
                + "). QEMU said: " + tail(dir.resolve(QEMU_LOG), 4)
                + ". The guest console's last lines: " + (console == null ? "(not connected)" : console.tail(CONSOLE_TAIL_LINES)));
    }

    /** The last {@code lines} non-empty lines of a log, on one line, printable. */
    private static String tail(Path log, int lines) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.ISO_8859_1).stream().map(String::strip)
                    .filter(l -> !l.isEmpty()).toList();
            if (all.isEmpty()) {
                return "(nothing)";
            }
            return Printable.of(String.join(" | ", all.subList(Math.max(0, all.size() - lines), all.size())), 2000);
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    /** Kills and removes one guest: the channel first (the guest then ends itself), then QEMU, then its directory. */
    void destroy(MicroVmSandbox sandbox) {
        live.remove(sandbox.id());
        Guest guest = sandbox.guest();
        if (guest != null) {
            if (!guest.agent().isOpen()) {
                // the guest ended its agent's channel itself: what its kernel said last is the only account of why
                LOG.warn("the agent of sandbox {} ended before the sandbox was destroyed; the guest console's last lines: {}", sandbox.id(),
                        guest.console().tail(CONSOLE_TAIL_LINES));
            }
            guest.stop();
            if (guest.ram() != null) {
                released(guest.ram());
            }
        }
        HostFiles.deleteTree(sandbox.dir());
        if (sandbox.suspended() != null) {
            HostFiles.deleteTree(sandbox.suspended());     // paused to disk: its saved guest goes with it
        }
        if (sandbox.image() != null) {
            sandbox.image().close();
        }
    }

    /**
     * Pauses {@code sandbox} to disk: its guest saved into {@code dir} ({@link GuestSnapshot}), then
     * stopped, its QEMU, jail and RAM gone, until {@link #wake}. The sandbox directory (its broker's run
     * directory) and its image stay.
     */
    void suspend(MicroVmSandbox sandbox, Path dir) {
        Guest guest = sandbox.guest();
        closeQuietly(GuestSnapshot.save(sandbox, dir));      // the agent's channel: the guest is stopped for good
        sandbox.suspended(dir);
        guest.stop();
        if (guest.ram() != null) {
            released(guest.ram());
        }
        HostFiles.deleteTree(sandbox.dir().resolve(VMM_DIR));
        HostFiles.deleteTree(sandbox.dir().resolve(VmmJail.ROOT_MOUNT));
    }

    /** Restores a sandbox paused to disk in place (same id, directory and broker attachment), and removes what was saved. */
    void wake(MicroVmSandbox sandbox) {
        Path saved = sandbox.suspended();
        GuestSnapshot snapshot = GuestSnapshot.read(saved);
        SnapshotRam ram = null;
        try {
            ram = snapshotRam(snapshot);
            Path disk = sandbox.image() == null ? null : GuestDisks.diskOf(images, sandbox.image());
            sandbox.woken(launch(sandbox.id(), sandbox.spec(), sandbox.dir(), List.of(), disk, snapshot.egress(), snapshot, ram));
        } catch (IOException | RuntimeException e) {
            if (ram != null) {
                released(ram);
            }
            throw AirlockException.unavailable("sandbox " + sandbox.id() + " could not be resumed from disk: " + e.getMessage()
                    + " (destroy it)");
        }
        HostFiles.deleteTree(saved);
    }

    /**
     * SIGKILL to the jail's first process ({@code unshare}, whose child QEMU then gets SIGKILL too), and waits for
     * it; the jail's cgroup then finds anything else.
     */
    private static void kill(Process qemu) {
        qemu.destroyForcibly();
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    if (!qemu.waitFor(KILL_WAIT_SECONDS, TimeUnit.SECONDS)) {
                        LOG.warn("QEMU process {} did not end within {}s of SIGKILL", qemu.pid(), KILL_WAIT_SECONDS);
                    }
                    return;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Kills the QEMU of every guest whose instance is gone (found by the instance directory on its
     * command line, also when that directory went first), then removes those instances' directories.
     */
    @Override
    public List<String> reapOrphans() {
        List<String> reaped = new ArrayList<>();
        String enginesPrefix = config.stateRoot().toAbsolutePath() + "/engines/";
        ProcessHandle.allProcesses().forEach(p -> {
            String instance = instanceOf(p, enginesPrefix);
            if (instance != null && !state.isAlive(instance) && p.destroyForcibly()) {
                try {
                    p.onExit().get(KILL_WAIT_SECONDS, TimeUnit.SECONDS);
                } catch (Exception e) {
                    LOG.warn("orphan QEMU process {} did not end within {}s of SIGKILL", p.pid(), KILL_WAIT_SECONDS);
                }
                reaped.add("QEMU process " + p.pid() + " of instance " + instance);
            }
        });
        reaped.addAll(VmmJail.reap(config.stateRoot(), instance -> !state.isAlive(instance),
                instance -> Files.isDirectory(state.instanceDir(instance))));
        reaped.addAll(state.removeDeadInstances(instance -> List.of()));
        reaped.forEach(line -> LOG.info("reaped orphan {}", line));
        return reaped;
    }

    /** The instance a QEMU process of this driver's state root belongs to, or null if it is not one. */
    static String instanceOf(ProcessHandle p, String enginesPrefix) {
        List<String> args = p.info().arguments().map(List::of).orElse(List.of());
        if (!p.info().command().map(c -> c.endsWith("/" + Qemu.BINARY)).orElse(false)) {
            return null;
        }
        for (String arg : args) {
            int at = arg.indexOf(enginesPrefix);
            if (at >= 0) {
                String rest = arg.substring(at + enginesPrefix.length());
                int slash = rest.indexOf('/');
                return slash > 0 ? rest.substring(0, slash) : null;
            }
        }
        return null;
    }

    @Override
    public boolean isAlive(String instance) {
        return state.isAlive(instance);
    }

    @Override
    public void close() {
        state.closeAfterDestroying(live.values());
    }

    /** What runs one guest; replaced when a sandbox paused to disk wakes. */
    record Guest(AgentClient agent, Process qemu, VmmJail jail, GuestConsole console, EgressMux egress, Qmp qmp,
                 SocketChannel control, SnapshotRam ram, boolean runFiles) {

        /** Stops it: the agent's channel, QEMU, the jail (its cgroups and uid), the host's ends of its ports. Each part may be null. */
        void stop() {
            if (agent != null) {
                agent.close();
            }
            if (qemu != null) {
                kill(qemu);
            }
            if (jail != null) {
                jail.destroy();
            }
            if (console != null) {
                console.close();
            }
            if (egress != null) {
                egress.close();
            }
            if (qmp != null) {
                qmp.close();
            }
            closeQuietly(control);
        }
    }
}
