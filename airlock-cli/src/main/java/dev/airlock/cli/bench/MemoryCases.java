package dev.airlock.cli.bench;

import dev.airlock.core.Engine;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.microvm.MicroVmDriver;
import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Host memory of idle sandboxes. For each level, N sandboxes are created (no pool) by a few
 * creators at once, left idle, measured two ways, and destroyed: the sum of their memory cgroups'
 * usage, and how much the host's MemAvailable dropped since just before they were created (which
 * also counts the runtime's state, the kernel's per-container objects and this JVM's share; it is
 * host-wide, so anything else running moves it too). A reading after they are destroyed goes to the
 * notes, as a hint of that noise and of memory the kernel frees only lazily. At the end the leak
 * check must find nothing of them.
 */
public final class MemoryCases {

    public static final String SECTION = "memory";
    private static final double MIB = 1024.0 * 1024.0;
    private static final int CREATORS = 4;
    private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");

    private MemoryCases() {
    }

    /** 10, 100, 500 below {@code max}, and {@code max} itself. */
    public static List<Integer> levels(int max) {
        List<Integer> levels = new ArrayList<>();
        for (int n : new int[]{10, 100, 500}) {
            if (n < max) {
                levels.add(n);
            }
        }
        levels.add(max);
        return levels;
    }

    public static List<Stats> measure(Progress progress, OciDriverConfig config, int max, long settleMillis, List<String> notes) throws Exception {
        List<Stats> results = new ArrayList<>();
        String prefix;
        try (Engine engine = new Engine(new OciDriver(config), 0, SandboxSpec.defaults());
             ExecutorService creators = Executors.newFixedThreadPool(CREATORS)) {
            prefix = "al-" + engine.driver().instance() + "-";
            for (int level : levels(max)) {
                results.addAll(level(progress, engine, creators, level, settleMillis, notes));
            }
        }
        List<String> leaks = new LeakCheck(config).find(prefix);
        if (!leaks.isEmpty()) {
            throw new IllegalStateException("the memory benchmark's sandboxes left " + leaks.size() + " leftover(s): " + leaks);
        }
        notes.add("memory: leak check after destroying them all: clean");
        return results;
    }

    private static List<Stats> level(Progress progress, Engine engine, ExecutorService creators, int level, long settleMillis,
                                     List<String> notes) throws Exception {
        String label = "memory: " + level + " idle sandboxes";
        List<Sandbox> sandboxes = Collections.synchronizedList(new ArrayList<>());
        progress.begin(label + " (creating, " + CREATORS + " at a time)", level);
        Reading before = read(settleMillis);
        Reading during;
        double[] usage;
        double createSeconds;
        try {
            long t0 = System.nanoTime();
            inParallel(creators, level, i -> {
                sandboxes.add(engine.create(SandboxSpec.defaults()));
                progress.step();
            });
            createSeconds = (System.nanoTime() - t0) / 1e9;
            progress.note("settling");
            during = read(settleMillis);
            usage = cgroupUsage(sandboxes);
        } finally {
            progress.end();
            List<Sandbox> all = List.copyOf(sandboxes);
            progress.begin(label + " (destroying)", all.size());
            inParallel(creators, all.size(), i -> {
                all.get(i).close();
                progress.step();
            });
            progress.end();
        }
        Reading after = read(settleMillis);
        double drop = (before.bytes - during.bytes) / MIB;
        double sum = Arrays.stream(usage).sum();
        notes.add(String.format("memory: %d idle sandboxes: cgroup sum %.1f MiB (%.2f MiB each on average); MemAvailable before %.0f MiB, "
                        + "with them %.0f MiB (drop %.1f MiB), %.0f MiB after destroying them; created in %.1fs",
                level, sum, sum / level, before.bytes / MIB, during.bytes / MIB, drop, after.bytes / MIB, createSeconds));
        Stats cgroup = Stats.of(SECTION, label + ": memory cgroup usage per sandbox", "MiB", usage);
        Stats host = new Stats(SECTION, label + ": host MemAvailable drop per sandbox", drop / level, drop / level, drop / level,
                "MiB", null, null);
        return List.of(cgroup, host.relativeTo(cgroup));
    }

    @FunctionalInterface
    private interface Task {
        void run(int i) throws Exception;
    }

    private static void inParallel(ExecutorService threads, int count, Task task) throws Exception {
        List<Future<?>> futures = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int index = i;
            futures.add(threads.submit(() -> {
                task.run(index);
                return null;
            }));
        }
        Exception failure = null;
        for (Future<?> f : futures) {
            try {
                f.get();
            } catch (Exception e) {
                failure = failure == null ? e : failure;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * Each sandbox's memory cgroup usage in MiB (cgroup v2 memory.current, v1 memory.usage_in_bytes).
     *
     * @throws NoSuchFileException if a sandbox has no memory cgroup of its own under /sys/fs/cgroup/airlock
     */
    static double[] cgroupUsage(List<Sandbox> sandboxes) throws IOException {
        boolean v2 = Files.exists(CGROUP_ROOT.resolve("cgroup.controllers"));
        List<Sandbox> all = List.copyOf(sandboxes);
        double[] usage = new double[all.size()];
        for (int i = 0; i < usage.length; i++) {
            String id = all.get(i).id().value();
            // an OCI sandbox's cgroup, or a microVM guest's QEMU's
            String parent = Files.exists((v2 ? CGROUP_ROOT : CGROUP_ROOT.resolve("memory")).resolve("airlock").resolve(id))
                    ? "airlock" : MicroVmDriver.CGROUP_PARENT;
            Path file = v2 ? CGROUP_ROOT.resolve(parent).resolve(id).resolve("memory.current")
                    : CGROUP_ROOT.resolve("memory").resolve(parent).resolve(id).resolve("memory.usage_in_bytes");
            usage[i] = Long.parseLong(Files.readString(file).trim()) / MIB;
        }
        return usage;
    }

    private record Reading(long bytes) {
    }

    /** MemAvailable after garbage collection and {@code settleMillis}: the median of five reads over a second. */
    private static Reading read(long settleMillis) throws IOException, InterruptedException {
        for (int i = 0; i < 5; i++) {
            System.gc();    // full collections let the heap shrink (the serial collector shrinks it in steps)
        }
        Thread.sleep(settleMillis);
        long[] reads = new long[5];
        for (int i = 0; i < reads.length; i++) {
            reads[i] = memAvailable();
            Thread.sleep(250);
        }
        Arrays.sort(reads);
        return new Reading(reads[2]);
    }

    private static long memAvailable() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith("MemAvailable:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IOException("/proc/meminfo has no MemAvailable line");
    }
}
