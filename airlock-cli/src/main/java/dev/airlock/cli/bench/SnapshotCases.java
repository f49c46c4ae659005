package dev.airlock.cli.bench;

import dev.airlock.core.Isolation;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

/**
 * Snapshots through a real server's REST API: taking one of a sandbox whose /workspace holds N MB,
 * restoring it (a fork of one), and forking ten (three with --quick); the baselines, measured in the same run, are a
 * host copy of the same N MB (what a snapshot or restore cannot beat: the bytes must move) and
 * creating ten empty sandboxes (what a fork adds to a create). Last, ten forks of a 100 MiB
 * /workspace (8 with --quick) with the files shared copy-on-write, against the same forks on the
 * copy path.
 */
public final class SnapshotCases {

    public static final String SECTION = "snapshots";

    private SnapshotCases() {
    }

    /** The sizes of /workspace measured, in MiB. */
    public static List<Integer> sizes(boolean quick) {
        return quick ? List.of(1) : List.of(10, 100);
    }

    /** How many sandboxes the fork case makes, of a snapshot of how many MiB. */
    public static int forkCount(boolean quick) {
        return quick ? 3 : 10;
    }

    public static int forkMiB(boolean quick) {
        return quick ? 1 : 10;
    }

    /**
     * The files cases on {@code driver}'s runtime, then the memory snapshots of gVisor and of the
     * microVM where {@code tiers} has them (a tier left out is a note: the microVM's cases boot
     * guests under emulation here, a quarter of an hour).
     */
    public static List<Stats> measure(Progress progress, OciDriverConfig driver, List<TierCases.Tier> tiers, int runs, boolean quick,
                                      List<String> notes) throws Exception {
        Sampler sampler = new Sampler(runs, 1, progress);
        List<Stats> stats = new ArrayList<>();
        Path dataDir = Files.createTempDirectory("airlock-bench");
        ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(2).withDriver(driver.toSettings());
        try (AirlockServer server = AirlockServer.start(config)) {
            BenchClient client = new BenchClient(server.uri(), server.token());
            for (int mb : sizes(quick)) {
                Path source = dataDir.resolve("host-" + mb);
                byte[] chunk = new byte[1 << 20];
                new Random(mb).nextBytes(chunk);
                try (var out = Files.newOutputStream(source)) {
                    for (int i = 0; i < mb; i++) {
                        out.write(chunk);
                    }
                }
                Path copy = dataDir.resolve("copy-" + mb);
                Stats host = sampler.measure("host: copy " + mb + " MiB (baseline)",
                        () -> Files.copy(source, copy, StandardCopyOption.REPLACE_EXISTING), () -> Files.deleteIfExists(copy));
                stats.add(host.in(SECTION));

                // room for the file in the sandbox and in each restored one
                String limits = "{\"disk\": \"" + (mb * 2 + 16) + "m\", \"memory\": \"" + (mb * 4 + 256) + "m\", \"fileSize\": \"" + (mb + 1) + "m\"}";
                String id = client.create("{\"limits\": " + limits + "}");
                client.exec(id, "sh", "-c", "head -c " + (mb << 20) + " /dev/urandom > /workspace/data");
                List<String> snapshots = new ArrayList<>();
                stats.add(sampler.measure("snapshot of " + mb + " MiB in /workspace", () -> snapshots.add(client.snapshot(id)))
                        .in(SECTION).relativeTo(host));
                String snap = snapshots.getLast();
                List<String> restored = new ArrayList<>();
                Sampler.Case clear = deleting(client, restored);
                stats.add(sampler.measure("restore " + mb + " MiB (fork of 1)", () -> restored.addAll(client.fork(snap, 1, limits)), clear)
                        .in(SECTION).relativeTo(host));
                clear.once();
                client.delete(id);
                for (String s : snapshots) {
                    client.deleteSnapshot(s);
                }
            }
            // ten from one 10 MiB snapshot, against ten empty creates
            int mb = forkMiB(quick);
            int n = forkCount(quick);
            String id = client.create("{\"limits\": {\"disk\": \"64m\"}}");
            client.exec(id, "sh", "-c", "head -c " + (mb << 20) + " /dev/urandom > /workspace/data");
            String snap = client.snapshot(id);
            client.delete(id);
            List<String> made = new ArrayList<>();
            Sampler.Case clear = deleting(client, made);
            Stats empty = sampler.measure("create " + n + " empty sandboxes (baseline)", () -> {
                for (int i = 0; i < n; i++) {
                    made.add(client.create());
                }
            }, clear);
            clear.once();
            stats.add(empty.in(SECTION));
            stats.add(sampler.measure("fork " + n + " of " + mb + " MiB", () -> made.addAll(client.fork(snap, n, "{}")), clear).in(SECTION).relativeTo(empty));
            clear.once();
            client.deleteSnapshot(snap);
            stats.addAll(copyOnWrite(sampler, client, quick));
        } finally {
            try (var files = Files.walk(dataDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        // --quick (the fast lane's) runs each memory case once, with no warm-up: it proves the cases run
        List<String> names = tiers.stream().map(TierCases.Tier::name).toList();
        if (names.contains(Isolation.GVISOR.id())) {
            stats.addAll(memory(quick ? new Sampler(1, 0, progress) : sampler, driver.withRuntime("runsc"), quick, notes));
        } else {
            notes.add("snapshots: gVisor's memory snapshots not measured: --tiers leaves gvisor out");
        }
        if (names.contains(Isolation.MICROVM.id())) {
            stats.addAll(microvm(quick ? new Sampler(1, 0, progress) : new Sampler(3, 1, progress), quick, notes));
        } else {
            notes.add("snapshots: the microVM's memory snapshots not measured: --tiers leaves microvm out");
        }
        return stats;
    }

    /** How many guests the microVM fork, memory and refill cases make: every cold one a boot under emulation (seconds). */
    public static int microvmForkCount(boolean quick) {
        return quick ? 2 : 10;
    }

    /** MiB of random bytes a microVM guest of the memory cases holds in its /tmp (its RAM). */
    public static int microvmFillMiB(boolean quick) {
        return quick ? 8 : 64;
    }

    /**
     * Memory snapshots on the microVM tier (QEMU's saved state and the guest's RAM), through a server
     * whose guests start from a stored image (busybox, imported here): a guest holding {@link
     * #microvmFillMiB} of random bytes in its RAM is saved (ratio: a host copy of its RAM's size); a
     * fork of one and of {@link #forkCount} restore it (ratio: as many cold creates, each a boot that
     * then fills the same memory); then the host's memory of that many forks against as many cold
     * guests (MemAvailable drop, measured once each); last the warm pool's refill rate ({@link #poolRefill}).
     * Skipped, with a note, where QEMU, busybox-static or mksquashfs is missing.
     */
    private static List<Stats> microvm(Sampler sampler, boolean quick, List<String> notes) throws Exception {
        int mb = microvmFillMiB(quick);
        int memoryMiB = 64 + mb;
        int n = microvmForkCount(quick);
        List<Stats> stats = new ArrayList<>();
        Path busybox = Path.of("/bin/busybox");
        if (!Files.isRegularFile(busybox)) {
            notes.add("snapshots: the microVM memory cases need busybox-static (apt-get install busybox-static) for their image");
            return stats;
        }
        Path dataDir = Files.createTempDirectory("airlock-bench");
        // the image store apart: its directory must let the guests' QEMUs (host ids of their own) pass, the data directory not
        Path storeDir = Files.createTempDirectory("airlock-bench-images");
        try {
            Files.setAttribute(storeDir, "unix:mode", 0711);
            Path store = storeDir.resolve("images");
            dev.airlock.oci.image.ImageStore.at(store).add("bench-vm", "busybox", new java.io.ByteArrayInputStream(busyboxLayer(busybox)));
            Files.writeString(dataDir.resolve("policy.yaml"), """
                    profiles:
                      default: {isolation: microvm, images: [bench-vm]}
                    clients:
                      local: {tokenFile: token, profiles: [default], allow: ["*"]}
                    """);
            ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(0)
                    .withPolicyFile(dataDir.resolve("policy.yaml"))
                    .withDriver(dev.airlock.microvm.MicroVmDriverConfig.defaults().withImageRoot(store).toSettings());
            AirlockServer server;
            try {
                server = AirlockServer.start(config);
            } catch (RuntimeException e) {
                notes.add("snapshots: the microVM memory cases did not start here: " + e.getMessage());
                return stats;
            }
            try (server) {
                BenchClient client = new BenchClient(server.uri(), server.token());
                String body = "{\"image\": \"bench-vm\", \"limits\": {\"memory\": \"" + memoryMiB + "m\", \"disk\": \"" + (mb + 16) + "m\"}}";
                String limits = "{\"memory\": \"" + memoryMiB + "m\", \"disk\": \"" + (mb + 16) + "m\"}";
                // the guest's RAM: the limit and the guest kernel's share (Qemu.GUEST_KERNEL_BYTES)
                long ramMiB = memoryMiB + 128;
                String fill = "busybox dd if=/dev/urandom of=/tmp/held bs=1M count=" + mb + " 2>/dev/null";
                Stats host = hostCopy(sampler, dataDir, "microVM: host: copy " + ramMiB + " MiB, a guest's RAM (baseline)", ramMiB);
                stats.add(host);
                String id = client.create(body);
                client.exec(id, "/bin/sh", "-c", fill);
                List<String> made = new ArrayList<>();
                Sampler.Case clear = deleting(client, made, 0);
                String snap = snapshotAndForks(stats, sampler, client, "microVM: memory snapshot of a guest of " + ramMiB + " MiB RAM holding "
                        + mb + " MiB", host, id, body, limits, fill, "microVM: ", " + fill " + mb + " MiB", n, made);
                // host memory: n cold guests (each booted and filled) against n forks of the snapshot
                long before = MemoryCases.settledMemAvailable(1000);
                for (int i = 0; i < n; i++) {
                    String s = client.create(body);
                    made.add(s);
                    client.exec(s, "/bin/sh", "-c", fill);
                }
                double coldMiB = (before - MemoryCases.settledMemAvailable(1000)) / (double) (1 << 20);
                clear.once();
                before = MemoryCases.settledMemAvailable(1000);
                made.addAll(client.fork(snap, n, limits));
                for (String s : made) {
                    client.exec(s, "/bin/sh", "-c", "test -s /tmp/held");      // each fork has run, and holds the bytes
                }
                double forkMiB = (before - MemoryCases.settledMemAvailable(1000)) / (double) (1 << 20);
                clear.once();
                Stats coldMemory = single("microVM: host memory of " + n + " cold guests holding " + mb + " MiB each (baseline)", coldMiB, "MiB");
                stats.add(coldMemory);
                stats.add(single("microVM: host memory of " + n + " forks of the memory snapshot", forkMiB, "MiB").relativeTo(coldMemory));
                client.deleteSnapshot(snap);
            }
            stats.addAll(poolRefill(store, n, memoryMiB, mb));
        } finally {
            for (Path dir : List.of(dataDir, storeDir)) {
                try (var files = Files.walk(dir)) {
                    files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
        return stats;
    }

    /**
     * The microVM warm pool's refill rate: {@code n} guests made for a pool through the driver, each
     * booted (baseline), against each restored from the booted guest the driver saved for the pool
     * (made once before, not timed). Rates in guests per second, measured once each; ratio: restored
     * to booted (above 1: faster).
     */
    private static List<Stats> poolRefill(Path store, int n, int memoryMiB, int mb) {
        var limits = dev.airlock.core.Limits.DEFAULTS.withMemoryBytes((long) memoryMiB << 20).withDiskBytes((long) (mb + 16) << 20);
        var spec = new dev.airlock.core.SandboxSpec("bench-vm", limits, java.util.Map.of());
        try (var driver = new dev.airlock.microvm.MicroVmDriver(dev.airlock.microvm.MicroVmDriverConfig.defaults().withImageRoot(store))) {
            var none = dev.airlock.core.SandboxBroker.NONE;
            driver.createForPool(dev.airlock.core.SandboxId.random(driver.instance()), spec, none).destroy();   // boots and saves
            Stats booted = single("microVM: warm pool refill, " + n + " guests each booted (baseline)",
                    rate(n, () -> driver.create(dev.airlock.core.SandboxId.random(driver.instance()), spec, none)), "/s");
            Stats restored = single("microVM: warm pool refill, " + n + " guests restored from the pool's booted guest",
                    rate(n, () -> driver.createForPool(dev.airlock.core.SandboxId.random(driver.instance()), spec, none)), "/s");
            return List.of(booted, restored.relativeTo(booted));
        }
    }

    /** Guests per second to make {@code n} of them one after the other; all are destroyed after. */
    private static double rate(int n, java.util.function.Supplier<dev.airlock.core.IsolationDriver.DriverSandbox> make) {
        List<dev.airlock.core.IsolationDriver.DriverSandbox> made = new ArrayList<>();
        try {
            long started = System.nanoTime();
            for (int i = 0; i < n; i++) {
                made.add(make.get());
            }
            return n / ((System.nanoTime() - started) / 1e9);
        } finally {
            made.forEach(dev.airlock.core.IsolationDriver.DriverSandbox::destroy);
        }
    }

    /** A host copy of {@code mib} MiB of random bytes, the floor of a memory snapshot of as much memory (baseline). */
    private static Stats hostCopy(Sampler sampler, Path dataDir, String name, long mib) throws Exception {
        Path source = dataDir.resolve("host-memory");
        byte[] chunk = new byte[1 << 20];
        new Random(mib).nextBytes(chunk);
        try (var out = Files.newOutputStream(source)) {
            for (long i = 0; i < mib; i++) {
                out.write(chunk);
            }
        }
        Path copy = dataDir.resolve("copy-memory");
        return sampler.measure(name, () -> Files.copy(source, copy, StandardCopyOption.REPLACE_EXISTING), () -> Files.deleteIfExists(copy))
                .in(SECTION);
    }

    /**
     * The rows every tier's memory cases share, on a server where sandbox {@code id} holds its memory
     * already: its memory snapshot {@code snapshotName} (ratio to {@code copy}, each run's snapshot
     * deleted after it), then forks of 1 and {@code n} of one kept snapshot against as many cold creates
     * ({@code body}) that each run {@code fill}. The sandbox is deleted; the kept snapshot's id is
     * returned, {@code made} empty again.
     */
    private static String snapshotAndForks(List<Stats> stats, Sampler sampler, BenchClient client, String snapshotName, Stats copy,
                                           String id, String body, String limits, String fill, String tier, String filled, int n,
                                           List<String> made) throws Exception {
        List<String> snapshots = new ArrayList<>();
        Sampler.Case dropSnapshots = () -> {
            for (String s : snapshots) {
                client.deleteSnapshot(s);
            }
            snapshots.clear();
        };
        stats.add(sampler.measure(snapshotName, () -> snapshots.add(client.snapshotWithMemory(id)), dropSnapshots).in(SECTION)
                .relativeTo(copy));
        dropSnapshots.once();
        String snap = client.snapshotWithMemory(id);
        client.delete(id);
        Sampler.Case clear = deleting(client, made, 0); // no pool here: wait for teardowns only
        for (int count : List.of(1, n)) {
            Stats cold = sampler.measure(tier + (count == 1 ? "cold create" : count + " cold creates") + filled + " (baseline)", () -> {
                for (int i = 0; i < count; i++) {
                    String s = client.create(body);
                    made.add(s);
                    client.exec(s, "/bin/sh", "-c", fill);
                }
            }, clear);
            clear.once();
            stats.add(cold.in(SECTION));
            stats.add(sampler.measure(tier + "fork of " + count + " from the memory snapshot" + (count == 1 ? " (restore)" : ""),
                    () -> made.addAll(client.fork(snap, count, limits)), clear).in(SECTION).relativeTo(cold));
            clear.once();
        }
        return snap;
    }

    private static Stats single(String name, double value, String unit) {
        return new Stats(SECTION, name, value, value, value, unit, null, null);
    }

    /** A layer (a tar) of busybox-static as /bin/busybox with /bin/sh linked to it. */
    private static byte[] busyboxLayer(Path busybox) throws java.io.IOException {
        java.io.ByteArrayOutputStream layer = new java.io.ByteArrayOutputStream();
        try (var tar = new org.apache.commons.compress.archivers.tar.TarArchiveOutputStream(layer)) {
            var bin = new org.apache.commons.compress.archivers.tar.TarArchiveEntry("bin/",
                    org.apache.commons.compress.archivers.tar.TarArchiveEntry.LF_DIR);
            bin.setMode(0755);
            tar.putArchiveEntry(bin);
            tar.closeArchiveEntry();
            byte[] content = Files.readAllBytes(busybox);
            var file = new org.apache.commons.compress.archivers.tar.TarArchiveEntry("bin/busybox");
            file.setSize(content.length);
            file.setMode(0755);
            tar.putArchiveEntry(file);
            tar.write(content);
            tar.closeArchiveEntry();
            var sh = new org.apache.commons.compress.archivers.tar.TarArchiveEntry("bin/sh",
                    org.apache.commons.compress.archivers.tar.TarArchiveEntry.LF_SYMLINK);
            sh.setLinkName("busybox");
            tar.putArchiveEntry(sh);
            tar.closeArchiveEntry();
        }
        return layer.toByteArray();
    }

    /** MiB of random bytes the process of the memory cases holds (runsc compresses its image: zeroes would cost nothing). */
    public static int memoryMiB(boolean quick) {
        return quick ? 8 : 256;
    }

    /**
     * Memory snapshots on gVisor (runsc's checkpoint): a sandbox whose Python process holds {@link
     * #memoryMiB} of random bytes is snapshotted with its memory; a fork of one restores it, and
     * forks of {@link #forkCount} restore as many. The baselines, in the same server (no warm pool,
     * so every create is cold): a host copy of the same bytes for the snapshot, and for the forks
     * as many cold creates that then start the same process and fill the same memory (what a fork
     * saves: reaching that state from nothing). Skipped, with a note, where runsc cannot run.
     */
    private static List<Stats> memory(Sampler sampler, OciDriverConfig runsc, boolean quick, List<String> notes) throws Exception {
        int mb = memoryMiB(quick);
        int n = forkCount(quick);
        List<Stats> stats = new ArrayList<>();
        Path dataDir = Files.createTempDirectory("airlock-bench");
        ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(0).withDriver(runsc.toSettings());
        AirlockServer server;
        try {
            server = AirlockServer.start(config);
        } catch (RuntimeException e) {
            notes.add("snapshots: the memory cases need gVisor (runsc), which did not start here: " + e.getMessage());
            Files.deleteIfExists(dataDir);
            return stats;
        }
        try (server) {
            BenchClient client = new BenchClient(server.uri(), server.token());
            Stats host = hostCopy(sampler, dataDir, "gVisor: host: copy " + mb + " MiB (baseline)", mb);
            stats.add(host);
            String limits = "{\"memory\": \"" + (mb * 3 + 256) + "m\"}";
            // the process writes /tmp/held once its bytes are in memory; the shell waits for that
            String fill = "python3 -c 'import os, time\nb = os.urandom(" + mb + " << 20)\nopen(\"/tmp/held\", \"w\").write(\"y\")\n"
                    + "time.sleep(86400)' >/dev/null 2>&1 & while [ ! -e /tmp/held ]; do sleep 0.05; done";
            String body = "{\"limits\": " + limits + "}";
            String id = client.create(body);
            client.exec(id, "/bin/sh", "-c", fill);
            String snap = snapshotAndForks(stats, sampler, client, "gVisor: memory snapshot of a process holding " + mb + " MiB", host,
                    id, body, limits, fill, "gVisor: ", " + fill " + mb + " MiB", n, new ArrayList<>());
            client.deleteSnapshot(snap);
        } finally {
            try (var files = Files.walk(dataDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return stats;
    }

    /** The /workspace size of the copy-on-write case, in MiB. */
    public static int cowMiB(boolean quick) {
        return quick ? 8 : 100;
    }

    /**
     * Forks of one snapshot with a large /workspace: where the tier shares the snapshot's files
     * copy-on-write (runc), against the copy path (each fork gets the files written through its
     * agent), forced for the baseline by the server's switch for this comparison; the ratio is
     * shared / copied. Under runsc both rows take the copy path.
     */
    private static List<Stats> copyOnWrite(Sampler sampler, BenchClient client, boolean quick) throws Exception {
        int mb = cowMiB(quick);
        int n = forkCount(quick);
        String limits = "{\"disk\": \"" + (mb * 2 + 16) + "m\", \"memory\": \"" + (mb * 2 + 256) + "m\", \"fileSize\": \"" + (mb + 1) + "m\"}";
        String id = client.create("{\"limits\": " + limits + "}");
        client.exec(id, "sh", "-c", "head -c " + (mb << 20) + " /dev/urandom > /workspace/data");
        String snap = client.snapshot(id);
        client.delete(id);
        List<String> made = new ArrayList<>();
        Sampler.Case clear = deleting(client, made);
        String copyProperty = "airlock.snapshot.copyWorkspace"; // SnapshotStore.COPY_WORKSPACE
        Stats copied;
        System.setProperty(copyProperty, "true");
        try {
            copied = sampler.measure("fork " + n + " of " + mb + " MiB, files copied (baseline)",
                    () -> made.addAll(client.fork(snap, n, limits)), clear);
            clear.once();
        } finally {
            System.clearProperty(copyProperty);
        }
        Stats shared = sampler.measure("fork " + n + " of " + mb + " MiB, files shared copy-on-write",
                () -> made.addAll(client.fork(snap, n, limits)), clear);
        clear.once();
        client.deleteSnapshot(snap);
        return List.of(copied.in(SECTION), shared.in(SECTION).relativeTo(copied));
    }

    /** Deletes the sandboxes in {@code ids}, forgets them, and waits for the warm pool to be full again. */
    private static Sampler.Case deleting(BenchClient client, List<String> ids) {
        return deleting(client, ids, 1);
    }

    /** As {@link #deleting(BenchClient, List)}, waiting for {@code ready} sandboxes in the pool (0: none, only the teardowns' end). */
    private static Sampler.Case deleting(BenchClient client, List<String> ids, int ready) {
        return () -> {
            for (String id : ids) {
                client.delete(id);
            }
            ids.clear();
            client.awaitPoolReady(ready);
        };
    }
}
