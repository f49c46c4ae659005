package dev.airlock.microvm;

import dev.airlock.agent.AgentClient;
import dev.airlock.core.AirlockException;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * A microVM guest's memory snapshot: what {@link #take} writes into a snapshot's directory and a
 * restore reads back.
 * <pre>
 *   vm.json   the guest's shape: RAM, vCPUs, image digest, which ports and exports it had
 *   state     QEMU's device state (its migration stream with x-ignore-shared: no RAM in it)
 *   ram       the guest's RAM, as large as the guest's, with holes where it was zero
 * </pre>
 * Taken with the guest stopped: the agent lets go of its port first (DETACH over a device, so no
 * frame is in flight and no egress connection or port stream is open), QEMU stops the vCPUs and
 * sends its device state to a socket the host listens on, the host copies the RAM out of the
 * guest's shared memory file, then the guest continues and its agent is taken up again (RESUME).
 * A restore is a new QEMU with the same devices started with {@code -incoming defer}, its RAM the
 * snapshot's ({@link SnapshotRam}), fed the state; the guest init's control process then reseeds
 * the kernel's random number generator and steps the clock ({@link #reseed}) before the agent is
 * taken up.
 *
 * <p>Only a guest whose root is a stored image's disk can be saved: QEMU 7.2 refuses to migrate a
 * guest with a mounted 9p export, which the image {@code system} (the host's /usr) and a sandbox's
 * inputs are.
 */
record GuestSnapshot(Path dir, long memoryBytes, int cpus, String imageDigest, boolean egress, boolean runFiles) {

    private static final Logger LOG = LoggerFactory.getLogger(GuestSnapshot.class);
    private static final JsonMapper JSON = JsonMapper.builder().build();
    static final String DESCRIPTION = "vm.json";
    static final String STATE = "state";
    static final String RAM = "ram";
    private static final int FORMAT = 1;
    /** The bound on one QMP command or on the wait for QEMU's migration to complete. */
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(60);
    /** The bound on a snapshot's device state: QEMU's is tens of KiB without RAM; a stream past this is not a device state. */
    static final long MAX_STATE_BYTES = 64L << 20;
    private static final SecureRandom RANDOM = new SecureRandom();

    /** Refuses a guest that cannot be saved, naming why: before anything of it is stopped. */
    static void checkSavable(MicroVmSandbox sandbox) {
        if (sandbox.image() == null) {
            throw AirlockException.unavailable("sandbox " + sandbox.id() + " runs the image 'system', the host's /usr shared over"
                    + " 9p, which QEMU cannot save: a microVM's memory snapshot needs a stored image (airlock image build), whose"
                    + " files the guest reads from a disk");
        }
        if (!sandbox.spec().inputs().isEmpty()) {
            throw AirlockException.unavailable("sandbox " + sandbox.id() + " has inputs, shared into its guest over 9p, which QEMU"
                    + " cannot save: take a memory snapshot of a microVM sandbox without inputs");
        }
    }

    /** Saves {@code sandbox}'s guest into the empty directory {@code dir}; the guest goes on. */
    static void take(MicroVmSandbox sandbox, Path dir) {
        SocketChannel agentChannel = save(sandbox, dir);
        goOn(sandbox, sandbox.qmp(), agentChannel);
    }

    /**
     * Saves {@code sandbox}'s guest into the empty directory {@code dir} and leaves it stopped, its
     * agent waiting for RESUME on the channel returned. On failure the guest goes on and the error
     * says it could not be saved.
     */
    static SocketChannel save(MicroVmSandbox sandbox, Path dir) {
        checkSavable(sandbox);
        long started = System.nanoTime();
        SocketChannel agentChannel;
        try {
            agentChannel = sandbox.agentClient().detachDevice();
        } catch (IOException e) {
            throw new AirlockException(AirlockException.Kind.CONFLICT, "sandbox " + sandbox.id() + " cannot be saved now: "
                    + e.getMessage() + " (a memory snapshot waits for no execution: let them end first)", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("interrupted while sandbox " + sandbox.id() + " was saved");
        }
        Qmp qmp = sandbox.qmp();
        long stopped = 0;
        long written;
        try {
            qmp.execute("migrate-set-capabilities", Map.of("capabilities",
                    List.of(Map.of("capability", "x-ignore-shared", "state", true))), STEP_TIMEOUT);
            qmp.execute("stop", Map.of(), STEP_TIMEOUT);
            stopped = System.nanoTime();
            saveState(sandbox, qmp, dir.resolve(STATE));
            written = saveRam(sandbox, dir.resolve(RAM));
            Files.writeString(dir.resolve(DESCRIPTION), JSON.writeValueAsString(Map.of("format", FORMAT,
                    "memoryBytes", Qemu.guestMemoryBytes(sandbox.spec().limits()), "cpus", Qemu.cpus(sandbox.spec().limits()),
                    "imageDigest", sandbox.image().digest(), "egress", sandbox.bridged(), "runFiles", sandbox.hadRunFiles())));
        } catch (IOException | RuntimeException e) {
            goOn(sandbox, qmp, agentChannel);
            throw AirlockException.unavailable("sandbox " + sandbox.id() + " could not be saved: " + e.getMessage()
                    + " (it goes on as it was)");
        }
        LOG.info("sandbox {}: memory snapshot taken in {} ms (guest stopped {} ms so far; RAM {} MiB, {} MiB of it not zero)", sandbox.id(),
                (System.nanoTime() - started) / 1_000_000, (System.nanoTime() - stopped) / 1_000_000, fileSize(dir.resolve(RAM)) >> 20,
                written >> 20);
        return agentChannel;
    }

    /** The guest continues and its agent is taken up again; a guest that cannot is lost (the caller's error says so). */
    private static void goOn(MicroVmSandbox sandbox, Qmp qmp, SocketChannel agentChannel) {
        try {
            qmp.execute("cont", Map.of(), STEP_TIMEOUT);
            sandbox.reconnected(AgentClient.resume(agentChannel, STEP_TIMEOUT));
        } catch (IOException e) {
            throw AirlockException.unavailable("sandbox " + sandbox.id() + " was lost while it was saved: " + e.getMessage()
                    + " (destroy it)");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw AirlockException.unavailable("sandbox " + sandbox.id() + " was lost: interrupted while it was saved");
        }
    }

    /** QEMU's device state, through a socket in its directory that only it may reach, into {@code file}. */
    private static void saveState(MicroVmSandbox sandbox, Qmp qmp, Path file) throws IOException {
        Path socket = sandbox.dir().resolve(MicroVmDriver.VMM_DIR).resolve(MicroVmDriver.OUTGOING_SOCKET);
        try (ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            listener.bind(UnixDomainSocketAddress.of(socket));
            Files.setAttribute(socket, "unix:uid", (int) sandbox.jail().uid());
            qmp.execute("migrate", Map.of("uri", "unix:" + socket), STEP_TIMEOUT);
            try (SocketChannel in = accept(listener, STEP_TIMEOUT);
                 FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                Files.deleteIfExists(socket);
                ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
                long total = 0;
                while (in.read(buffer) >= 0) {
                    buffer.flip();
                    total += buffer.remaining();
                    if (total > MAX_STATE_BYTES) {
                        throw new IOException("QEMU's device state passed " + (MAX_STATE_BYTES >> 20) + " MiB");
                    }
                    while (buffer.hasRemaining()) {
                        out.write(buffer);
                    }
                    buffer.clear();
                }
            }
            long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
            while (true) {
                String status = qmp.execute("query-migrate", Map.of(), STEP_TIMEOUT).path("status").asString();
                if (status.equals("completed")) {
                    return;
                }
                if (status.equals("failed") || status.equals("cancelled") || System.nanoTime() > deadline) {
                    throw new IOException("QEMU's migration ended " + status);
                }
                sleep(10);
            }
        } finally {
            Files.deleteIfExists(socket);
        }
    }

    /** The guest's RAM, read from QEMU's shared memory file, into a sparse file as large as the guest's RAM; the bytes written. */
    private static long saveRam(MicroVmSandbox sandbox, Path file) throws IOException {
        Path memory = sandbox.ramOfQemu();
        long size = Qemu.guestMemoryBytes(sandbox.spec().limits());
        try (RandomAccessFile sparse = new RandomAccessFile(file.toFile(), "rw")) {
            sparse.setLength(size);
        }
        try (FileChannel in = FileChannel.open(memory, StandardOpenOption.READ);
             FileChannel out = FileChannel.open(file, StandardOpenOption.WRITE)) {
            if (in.size() != size) {
                throw new IOException("QEMU's memory file is " + in.size() + " bytes, the guest's RAM " + size);
            }
            long written = SnapshotRam.copyNonZero(in, out, size);
            out.force(true);
            return written;
        }
    }

    /** Reads a snapshot's description; a snapshot that is not a microVM's, or is damaged, is refused. */
    static GuestSnapshot read(Path dir) {
        try {
            JsonNode d = JSON.readTree(Files.readString(dir.resolve(DESCRIPTION)));
            if (d.path("format").asInt() != FORMAT) {
                throw AirlockException.invalid("the snapshot in " + dir + " is of format " + d.path("format") + ": this driver reads " + FORMAT);
            }
            if (!Files.isRegularFile(dir.resolve(STATE)) || !Files.isRegularFile(dir.resolve(RAM))) {
                throw AirlockException.invalid("the snapshot in " + dir + " lacks its state or its RAM");
            }
            return new GuestSnapshot(dir, d.path("memoryBytes").asLong(), d.path("cpus").asInt(), d.path("imageDigest").asString(),
                    d.path("egress").asBoolean(), d.path("runFiles").asBoolean());
        } catch (IOException | tools.jackson.core.JacksonException e) {
            throw AirlockException.invalid("the snapshot in " + dir + " is not a microVM's memory snapshot (" + e.getMessage()
                    + "): it was taken on another tier");
        }
    }

    /**
     * What names this snapshot's RAM among those loaded: its RAM file's device, inode, size and
     * modification time. Every restore of one server snapshot gets the same file (hard links to its
     * blob, which change its change time, not its modification time), so all share one loaded copy; a
     * file written since is another.
     */
    String key() throws IOException {
        Map<String, Object> a = Files.readAttributes(dir.resolve(RAM), "unix:dev,ino,size,lastModifiedTime");
        return a.get("dev") + ":" + a.get("ino") + ":" + a.get("size") + ":" + a.get("lastModifiedTime");
    }

    Path ramFile() {
        return dir.resolve(RAM);
    }

    /** Refuses a restore into a sandbox whose guest would not be this one's: another image, RAM or vCPU count, or inputs. */
    void check(SandboxSpec spec, ImageStore.Lease image, boolean inputs) {
        if (image == null || !image.digest().equals(imageDigest)) {
            throw AirlockException.invalid("the memory snapshot's guest ran the image " + imageDigest + "; the sandbox asks for '"
                    + spec.image() + "'" + (image == null ? "" : " (" + image.digest() + ")") + ": restore it with the image it was taken on");
        }
        if (Qemu.guestMemoryBytes(spec.limits()) != memoryBytes || Qemu.cpus(spec.limits()) != cpus) {
            throw AirlockException.invalid("the memory snapshot's guest had " + (memoryBytes >> 20) + " MiB of RAM and " + cpus
                    + " vCPUs; the sandbox's limits give " + (Qemu.guestMemoryBytes(spec.limits()) >> 20) + " MiB and "
                    + Qemu.cpus(spec.limits()) + ": restore it with the limits it was taken with");
        }
        if (inputs) {
            throw AirlockException.invalid("a guest restored from a memory snapshot cannot have inputs (QEMU cannot save a 9p export)");
        }
    }

    /** Refuses a restore whose guest would have other devices than the saved one's (QEMU loads state only into the same). */
    void checkDevices(boolean bridged, boolean hasRunFiles) {
        if (bridged != egress || hasRunFiles != runFiles) {
            throw AirlockException.invalid("the memory snapshot's guest was " + (egress ? "" : "not ") + "bridged for egress; this"
                    + " sandbox's network policy would " + (bridged ? "" : "not ") + "bridge it: restore it under the network policy"
                    + " it was taken under");
        }
    }

    /** Feeds the saved device state to a QEMU started with {@code -incoming defer}, waits for it to load, and continues the guest. */
    void restoreInto(Qmp qmp, Path socket, long deadline) throws IOException {
        Duration left = Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
        qmp.execute("migrate-set-capabilities", Map.of("capabilities",
                List.of(Map.of("capability", "x-ignore-shared", "state", true))), left);
        qmp.execute("migrate-incoming", Map.of("uri", "unix:" + socket), left);
        try (SocketChannel out = SocketChannel.open(UnixDomainSocketAddress.of(socket));
             FileChannel in = FileChannel.open(dir.resolve(STATE), StandardOpenOption.READ)) {
            Files.deleteIfExists(socket);
            if (in.size() > MAX_STATE_BYTES) {
                throw new IOException("the snapshot's device state is " + in.size() + " bytes, more than a device state");
            }
            long at = 0;
            while (at < in.size()) {
                at += in.transferTo(at, in.size() - at, out);
            }
        }
        while (true) {
            String status = qmp.execute("query-status", Map.of(), left).path("status").asString();
            if (status.equals("running")) {
                return;
            }
            if (status.equals("paused")) {
                // loaded: it was saved stopped, and so it stays until told
                qmp.execute("cont", Map.of(), left);
                continue;
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("the restored guest did not run (QEMU's status: " + status + ")");
            }
            sleep(10);
        }
    }

    /**
     * Gives a just-restored guest's control process 32 bytes of the host's randomness and the host's
     * time, and waits for its answer: every guest restored from one snapshot starts with the same
     * kernel random state, which this makes its own before any code of the sandbox runs again.
     */
    static void reseed(SocketChannel control, long deadline) throws IOException {
        byte[] seed = new byte[32];
        RANDOM.nextBytes(seed);
        Instant now = Instant.now();
        ByteBuffer message = ByteBuffer.allocate(seed.length + 12).put(seed).putLong(now.getEpochSecond()).putInt(now.getNano()).flip();
        java.util.Arrays.fill(seed, (byte) 0);
        control.configureBlocking(true);
        while (message.hasRemaining()) {
            control.write(message);
        }
        control.configureBlocking(false);
        ByteBuffer answer = ByteBuffer.allocate(1);
        try (Selector selector = Selector.open()) {
            control.register(selector, SelectionKey.OP_READ);
            while (answer.hasRemaining()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IOException("the guest did not answer its reseed in time");
                }
                selector.select(Math.max(1, left / 1_000_000));
                selector.selectedKeys().clear();
                if (control.read(answer) < 0) {
                    throw new IOException("the guest's control port closed");
                }
            }
        }
        char said = (char) answer.get(0);
        if (said != 'k') {
            throw new IOException(said == 'r' ? "the guest could not reseed its random number generator"
                    : "the guest could not step its clock");
        }
    }

    private static SocketChannel accept(ServerSocketChannel listener, Duration timeout) throws IOException {
        listener.configureBlocking(false);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            SocketChannel channel = listener.accept();
            if (channel != null) {
                channel.configureBlocking(true);
                return channel;
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("QEMU did not connect to send its state");
            }
            sleep(5);
        }
    }

    private static void sleep(long millis) throws IOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted");
        }
    }

    private static long fileSize(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            return -1;
        }
    }
}
