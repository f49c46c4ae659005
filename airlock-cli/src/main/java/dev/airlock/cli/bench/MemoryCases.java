package dev.airlock.cli.bench;

import dev.airlock.core.Engine;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.microvm.MicroVmDriver;
import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.oci.RuncBaseline;

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
 * notes, as a hint of that noise and of memory the kernel frees only lazily. Each level also gives
 * its create and destroy rates (sandboxes per second, {@value #CREATORS} at a time), the create
 * rate beside plain runc starting and ending containers one at a time. First, unmeasured, the
 * engine creates and destroys sandboxes {@value #CREATORS} at a time for a while ({@link
 * Sampler#warmUpSeconds}): the rates are a long-running server's, whose JIT has compiled the create path,
 * not a fresh JVM's (a few hundred creates in, the rate here was still rising). A level the host has no
 * room for ({@link HostLimits}) is a note naming the limit, and the larger ones are skipped. At
 * the end the leak check must find nothing of them.
 */
public final class MemoryCases {

    public static final String SECTION = "memory";
    private static final double MIB = 1024.0 * 1024.0;
    private static final int CREATORS = 4;
    private static final int RUNC_RUNS = 10;
    /** The create rate's baseline row (after "memory: "). */
    public static final String RUNC_BASELINE = "runc run + delete of true, one at a time (baseline)";
    private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");

    private MemoryCases() {
    }

    /** 10, 100, 1000, 5000 below {@code max}, and {@code max} itself. */
    public static List<Integer> levels(int max) {
        List<Integer> levels = new ArrayList<>();
        for (int n : new int[]{10, 100, 1000, 5000}) {
            if (n < max) {
                levels.add(n);
            }
        }
        levels.add(max);
        return levels;
    }

    public static List<Stats> measure(Progress progress, OciDriverConfig config, int max, long settleMillis, int warmUpSeconds, List<String> notes)
            throws Exception {
        List<Stats> results = new ArrayList<>();
        Stats runc = runcRate(progress, config);
        results.add(runc);
        String prefix;
        try (Engine engine = new Engine(new OciDriver(config), 0, SandboxSpec.defaults());
             ExecutorService creators = Executors.newFixedThreadPool(CREATORS)) {
            prefix = "al-" + engine.driver().instance() + "-";
            Sampler.warmUp(progress, "memory", warmUpSeconds,
                    () -> inParallel(creators, CREATORS, i -> engine.create(SandboxSpec.defaults()).close()));
            for (int level : levels(max)) {
                String limit = HostLimits.shortOf(level);
                if (limit != null) {
                    notes.add("memory: " + level + " idle sandboxes not measured: " + limit);
                    break;
                }
                results.addAll(level(progress, engine, creators, level, settleMillis, runc, notes));
            }
        }
        List<String> leaks = new LeakCheck(config).find(prefix);
        if (!leaks.isEmpty()) {
            throw new IllegalStateException("the memory benchmark's sandboxes left " + leaks.size() + " leftover(s): " + leaks);
        }
        notes.add("memory: leak check after destroying them all: clean");
        return results;
    }

    /**
     * The create rate's baseline: plain {@code runc run} and {@code runc delete} of {@code true} in
     * the bundle Airlock would use, one container at a time, as containers per second. It starts
     * and ends a container as a create and a destroy do, with no agent, pool or Java in the way.
     */
    private static Stats runcRate(Progress progress, OciDriverConfig config) {
        String name = SECTION + ": " + RUNC_BASELINE;
        progress.begin(name, RUNC_RUNS + 1);
        double[] rates = new double[RUNC_RUNS];
        try (RuncBaseline runc = new RuncBaseline(config, List.of("true"))) {
            runc.runOnce();
            progress.step();
            for (int i = 0; i < RUNC_RUNS; i++) {
                long t0 = System.nanoTime();
                runc.runOnce();
                rates[i] = 1e9 / (System.nanoTime() - t0);
                progress.step();
            }
        } finally {
            progress.end();
        }
        return Stats.of(SECTION, name, "/s", rates);
    }

    private static List<Stats> level(Progress progress, Engine engine, ExecutorService creators, int level, long settleMillis,
                                     Stats runc, List<String> notes) throws Exception {
        String label = "memory: " + level + " idle sandboxes";
        List<Sandbox> sandboxes = Collections.synchronizedList(new ArrayList<>());
        progress.begin(label + " (creating, " + CREATORS + " at a time)", level);
        Reading before = read(settleMillis);
        Reading during;
        double[] usage;
        double createSeconds;
        double destroySeconds;
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
            long t0 = System.nanoTime();
            inParallel(creators, all.size(), i -> {
                all.get(i).close();
                progress.step();
            });
            destroySeconds = (System.nanoTime() - t0) / 1e9;
            progress.end();
        }
        Reading after = read(settleMillis);
        double drop = (before.bytes - during.bytes) / MIB;
        double sum = Arrays.stream(usage).sum();
        notes.add(String.format("memory: %d idle sandboxes: cgroup sum %.1f MiB (%.2f MiB each on average); MemAvailable before %.0f MiB, "
                        + "with them %.0f MiB (drop %.1f MiB), %.0f MiB after destroying them; created in %.1fs, destroyed in %.1fs",
                level, sum, sum / level, before.bytes / MIB, during.bytes / MIB, drop, after.bytes / MIB, createSeconds, destroySeconds));
        Stats cgroup = Stats.of(SECTION, label + ": memory cgroup usage per sandbox", "MiB", usage);
        Stats host = single(label + ": host MemAvailable drop per sandbox", drop / level, "MiB");
        Stats create = single(label + ": create rate, " + CREATORS + " at a time", level / createSeconds, "/s");
        Stats destroy = single(label + ": destroy rate, " + CREATORS + " at a time", level / destroySeconds, "/s");
        return List.of(cgroup, host.relativeTo(cgroup), create.relativeTo(runc), destroy.relativeTo(create));
    }

    /** A figure measured once for the whole level. */
    private static Stats single(String name, double value, String unit) {
        return new Stats(SECTION, name, value, value, value, unit, null, null);
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

    /** MemAvailable, in bytes, settled as {@link #read} settles it. */
    static long settledMemAvailable(long settleMillis) throws IOException, InterruptedException {
        return read(settleMillis).bytes();
    }

    /** MemAvailable after garbage collection and {@code settleMillis}: the median of five reads over a second. */
    private static Reading read(long settleMillis) throws IOException, InterruptedException {
        for (int i = 0; i < 5; i++) {
            System.gc();    // full collections let the heap shrink (the serial collector shrinks it in steps)
        }
        Thread.sleep(settleMillis);
        long[] reads = new long[5];
        for (int i = 0; i < reads.length; i++) {
            reads[i] = HostLimits.memAvailable();
            Thread.sleep(250);
        }
        Arrays.sort(reads);
        return new Reading(reads[2]);
    }
}
