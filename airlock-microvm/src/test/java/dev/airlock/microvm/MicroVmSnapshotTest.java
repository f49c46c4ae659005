package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Limits;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.image.ImageStore;
import dev.airlock.oci.image.TestArchives;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A guest saved whole (memory, processes, files) and restored, in place of a boot, into three
 * guests at once: a shell loop that counts in memory goes on counting in the original and in each
 * fork, the forks diverge, each reads its own kernel randomness (the control process reseeds it),
 * a file written before the snapshot is there, limits hold, and the forks share the snapshot's RAM
 * (one sealed memory file, mapped copy-on-write: QEMU cannot write it). A guest of the image
 * {@code system} (the host's /usr over 9p) is refused with the reason.
 */
class MicroVmSnapshotTest {

    static Path storeRoot;
    static MicroVmDriverConfig config;
    static MicroVmDriver driver;
    static Engine engine;
    static SandboxSpec spec;

    @BeforeAll
    static void openEngine() throws IOException {
        storeRoot = TestImages.storeDir("airlock-vm-snapshots");
        config = MicroVmDriverConfig.defaults().withImageRoot(storeRoot.resolve("images"));
        byte[] layer = TestImages.busybox().bytes();
        ImageStore.at(config.imageRoot()).importArchive(TestArchives.dockerSave(storeRoot.resolve("bb.tar"), List.of(layer)), "vm-snap");
        driver = new MicroVmDriver(config);
        engine = new Engine(driver);
        spec = new SandboxSpec("vm-snap", Limits.DEFAULTS.withMemoryBytes(64L << 20), Map.of());
    }

    @AfterAll
    static void closeEngine() {
        if (engine == null) {
            return;
        }
        String instance = driver.instance();
        engine.close();
        dev.airlock.core.HostFiles.deleteTree(storeRoot);
        assertThat(MicroVmLeakCheck.findAll(config.stateRoot())).as("leftovers of this test's guests").noneMatch(l -> l.contains(instance));
    }

    private static String sh(Sandbox sandbox, String line) {
        ExecResult r = sandbox.exec(ExecRequest.of("/bin/sh", "-c", line).withTimeout(Duration.ofSeconds(60)));
        assertThat(r.exitCode()).as(r.stderrText()).isZero();
        return r.stdoutText().strip();
    }

    private static long count(Sandbox sandbox) {
        return Long.parseLong(sh(sandbox, "busybox cat /tmp/n"));
    }

    @Test
    void aSavedGuestGoesOnInItselfAndInThreeForksThatDivergeAndReadTheirOwnRandomness() throws Exception {
        Path snapshot = Files.createDirectories(storeRoot.resolve("snapshot"));
        List<Sandbox> forks = new ArrayList<>();
        try (Sandbox original = engine.create(spec)) {
            sh(original, "echo before > /workspace/before.txt; (i=0; while :; do i=$((i+1)); echo $i > /tmp/n; busybox usleep 50000; done)"
                    + " </dev/null >/dev/null 2>&1 &");
            busyWaitForCount(original, 3);
            original.checkpoint(snapshot);
            assertThat(snapshot.resolve(GuestSnapshot.STATE)).isNotEmptyFile();
            assertThat(Files.size(snapshot.resolve(GuestSnapshot.RAM))).isEqualTo(Qemu.guestMemoryBytes(spec.limits()));
            long saved = count(original);
            busyWaitForCount(original, saved + 3);

            for (int i = 0; i < 3; i++) {
                forks.add(engine.restore(spec, snapshot));
            }
            Set<String> randomness = new HashSet<>();
            for (int i = 0; i < forks.size(); i++) {
                Sandbox fork = forks.get(i);
                assertThat(sh(fork, "busybox cat /workspace/before.txt")).isEqualTo("before");
                // hostile: the init's control port (reseed, clock) is not the sandbox's: no port device, no /sys to find one
                assertThat(sh(fork, "busybox ls /dev | busybox grep -c vport; test -e /sys/class/virtio-ports || echo no-sys"))
                        .isEqualTo("0\nno-sys");
                long first = count(fork);
                busyWaitForCount(fork, first + 3);
                sh(fork, "echo fork" + i + " > /workspace/mine.txt");
                randomness.add(sh(fork, "busybox head -c 16 /dev/urandom | busybox od -An -tx1"));
                // the clock is the host's, not the snapshot's
                long guestNow = Long.parseLong(sh(fork, "busybox date +%s"));
                assertThat(Math.abs(guestNow - System.currentTimeMillis() / 1000)).as("the fork's clock").isLessThan(30);
            }
            assertThat(randomness).as("each fork's kernel randomness is its own").hasSize(3);
            // the forks' RAM: one sealed memory file, which not even host root can write through a fork QEMU's descriptor
            Path ramFd = forkQemuRam(forks.getFirst());
            assertThat(Files.readSymbolicLink(ramFd).toString()).startsWith("/memfd:airlock-snapshot-ram");
            assertThat(forkQemuRam(forks.get(1))).satisfies(other -> assertThat(Files.getAttribute(other, "unix:ino"))
                    .as("one memory file for every fork").isEqualTo(Files.getAttribute(ramFd, "unix:ino")));
            try (java.nio.channels.FileChannel ram = java.nio.channels.FileChannel.open(ramFd, java.nio.file.StandardOpenOption.WRITE)) {
                assertThatThrownBy(() -> ram.write(java.nio.ByteBuffer.wrap(new byte[]{1}), 4096)).isInstanceOf(IOException.class)
                        .hasMessageContaining("Operation not permitted");
            }
            for (int i = 0; i < forks.size(); i++) {
                assertThat(sh(forks.get(i), "busybox cat /workspace/mine.txt")).as("forks diverge").isEqualTo("fork" + i);
            }
            assertThat(sh(original, "test -e /workspace/mine.txt || echo none")).isEqualTo("none");
            // the limits hold in a fork: its sandbox cgroup caps memory as the original's did
            assertThat(sh(forks.getFirst(), "busybox dd if=/dev/zero of=/dev/null bs=128M count=1 2>&1 || echo refused"))
                    .contains("refused");
        } finally {
            forks.forEach(Sandbox::close);
        }
    }

    /**
     * The warm pool of a stored image's guests: the first boots and is saved as booted, the rest are
     * restores of it (QEMU started with {@code -incoming}); each handed out is a fresh sandbox of its
     * own (own /tmp, own kernel randomness).
     */
    @Test
    void theWarmPoolRestoresItsGuestsFromOneBootedGuest() throws Exception {
        MicroVmDriver pooled = new MicroVmDriver(config);
        try (Engine pool = new Engine(pooled, 3, spec)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (pool.warmPoolReady() < 3) {
                assertThat(System.nanoTime()).as("the pool fills").isLessThan(deadline);
                Thread.sleep(100);
            }
            String instanceDir = config.stateRoot().resolve("engines").resolve(pooled.instance()) + "/";
            long restored = ProcessHandle.allProcesses()
                    .filter(p -> p.info().command().map(c -> c.endsWith("/" + Qemu.BINARY)).orElse(false))
                    .map(p -> p.info().arguments().map(a -> String.join(" ", a)).orElse(""))
                    .filter(a -> a.contains(instanceDir) && a.contains("-incoming defer")).count();
            assertThat(restored).as("pooled guests restored from the booted one, not booted").isEqualTo(2);
            Set<String> randomness = new HashSet<>();
            List<Sandbox> taken = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    Sandbox s = pool.create(spec);
                    taken.add(s);
                    assertThat(sh(s, "test -e /tmp/mine || echo fresh; echo " + i + " > /tmp/mine")).isEqualTo("fresh");
                    randomness.add(sh(s, "busybox head -c 16 /dev/urandom | busybox od -An -tx1"));
                }
            } finally {
                taken.forEach(Sandbox::close);
            }
            assertThat(randomness).hasSize(3);
        }
    }

    /**
     * Pause to disk: the guest is saved and its QEMU, jail and RAM are gone (no QEMU process of the
     * sandbox, no cgroup); resume restores it in place, same id, its counting loop going on.
     */
    @Test
    void aGuestPausedToDiskHoldsNoQemuUntilResumedInPlace() throws Exception {
        Path saved = storeRoot.resolve("paused");
        try (Sandbox sandbox = engine.create(spec)) {
            sh(sandbox, "(i=0; while :; do i=$((i+1)); echo $i > /tmp/n; busybox usleep 50000; done) </dev/null >/dev/null 2>&1 &");
            busyWaitForCount(sandbox, 3);
            Files.createDirectories(saved);
            sandbox.pauseToDisk(saved);
            String dir = config.stateRoot().resolve("engines").resolve(driver.instance()).resolve("sandboxes").resolve(sandbox.id().value()) + "/";
            assertThat(ProcessHandle.allProcesses().filter(p -> p.info().arguments().map(a -> String.join(" ", a).contains(dir)).orElse(false))
                    .count()).as("no QEMU while paused to disk").isZero();
            assertThat(VmmJail.allCgroups()).noneMatch(c -> c.getFileName().toString().equals(sandbox.id().value()));
            sandbox.resume();
            long after = count(sandbox);
            busyWaitForCount(sandbox, after + 3);
            assertThat(saved).as("what was saved goes once it is restored").doesNotExist();
        }
    }

    @Test
    void aGuestOfTheSystemImageIsRefusedWithTheReason() throws IOException {
        Path snapshot = Files.createDirectories(storeRoot.resolve("refused"));
        try (Sandbox system = engine.create(SandboxSpec.defaults())) {
            assertThatThrownBy(() -> system.checkpoint(snapshot)).isInstanceOf(AirlockException.class)
                    .hasMessageContaining("image 'system'").hasMessageContaining("stored image");
            assertThat(sh(system, "echo still")).isEqualTo("still");
        }
    }

    /** The descriptor a fork's QEMU holds its RAM on, as host root reaches it. */
    private static Path forkQemuRam(Sandbox fork) throws IOException {
        String dir = config.stateRoot().resolve("engines").resolve(driver.instance()).resolve("sandboxes").resolve(fork.id().value()) + "/";
        ProcessHandle qemu = ProcessHandle.allProcesses()
                .filter(p -> p.info().command().map(c -> c.endsWith("/" + Qemu.BINARY)).orElse(false))
                .filter(p -> p.info().arguments().map(a -> String.join(" ", a).contains(dir)).orElse(false))
                .findFirst().orElseThrow();
        return Path.of("/proc", Long.toString(qemu.pid()), "fd", Integer.toString(Qemu.RAM_FD));
    }

    private static void busyWaitForCount(Sandbox sandbox, long atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            String n = sh(sandbox, "busybox cat /tmp/n 2>/dev/null || echo 0");
            if (Long.parseLong(n) >= atLeast) {
                return;
            }
            assertThat(System.nanoTime()).as("the count reaches " + atLeast + " (at " + n + ")").isLessThan(deadline);
            Thread.sleep(100);
        }
    }
}
