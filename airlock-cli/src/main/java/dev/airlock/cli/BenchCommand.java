package dev.airlock.cli;

import dev.airlock.cli.bench.Baselines;
import dev.airlock.cli.bench.CliCases;
import dev.airlock.cli.bench.ClusterCases;
import dev.airlock.cli.bench.EgressCases;
import dev.airlock.cli.bench.EngineCases;
import dev.airlock.cli.bench.InterpreterCases;
import dev.airlock.cli.bench.MemoryCases;
import dev.airlock.cli.bench.Progress;
import dev.airlock.cli.bench.Report;
import dev.airlock.cli.bench.Sampler;
import dev.airlock.cli.bench.ServerCases;
import dev.airlock.cli.bench.SnapshotCases;
import dev.airlock.cli.bench.Stats;
import dev.airlock.cli.bench.TailCases;
import dev.airlock.cli.bench.ThroughputCases;
import dev.airlock.cli.bench.TierCases;
import dev.airlock.core.AirlockException;
import dev.airlock.oci.OciDriverConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code airlock bench}: one-shot and exec latency through Airlock, side by side with the same
 * command run bare, under bubblewrap and under plain {@code runc run}, as ratios; then the same
 * few cases under each isolation tier that works here (container, gVisor, microVM); then interpreter
 * contexts (create, a trivial cell, a chart cell) against the same code run one-shot; then one-shot
 * throughput with parallel clients, host memory per idle sandbox, egress proxy throughput and
 * snapshots; and the CLI one-shot ({@code bin/airlock run}) beside bare and sandbox-runtime's {@code srt}.
 * All but the tiers run on the {@code --runtime} tier. The cases themselves live in
 * {@link dev.airlock.cli.bench}.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure latency (also under each isolation tier), throughput, memory per sandbox and egress throughput against bare baselines, in one run.")
final class BenchCommand implements Callable<Integer> {

    private static final int[] CLIENTS = {1, 2, 4, 8};
    private static final int QUICK_MAX_SANDBOXES = 50;
    private static final int MAX_SANDBOXES = 5000;

    @Option(names = "--runs", paramLabel = "N", description = "Measured repetitions per latency case (default 30; 5 with --quick).")
    Integer runs;

    @Option(names = "--warmup", paramLabel = "N", description = "Unmeasured repetitions first (default 5; 1 with --quick).")
    Integer warmup;

    @Option(names = "--max-sandboxes", paramLabel = "N",
            description = "Most idle sandboxes for the memory and density cases: 10, 100, 1000, 5000 up to N (default and most 5000;"
                    + " at most 50 with --quick).")
    int maxSandboxes = MAX_SANDBOXES;

    @Option(names = "--json", description = "Print one JSON document (machine, method, every case) instead of the tables.")
    boolean json;

    @Option(names = "--tiers", split = ",", paramLabel = "TIER",
            description = "Isolation tiers to compare: container, gvisor, microvm (default: every one; one that does not work here is a note);"
                    + " also which tiers' memory snapshots are measured.")
    List<String> tiers;

    @Option(names = "--image", paramLabel = "NAME", description = "Also measure a cold one-shot in this stored image (it must have"
            + " python3), beside the one in 'system' (airlock image ls).")
    String image;

    @Option(names = "--cli-only", description = "Measure only the CLI one-shot (bin/airlock run beside bare python3 and srt).")
    boolean cliOnly;

    @Option(names = "--snapshots-only", description = "Measure only the snapshots: files (snapshot, restore, forks, copy-on-write) and"
            + " gVisor's memory snapshots (snapshot, restore, forks against cold creates that reach the same state).")
    boolean snapshotsOnly;

    @Option(names = "--tails-only", description = "Measure only the latency tails (p50, p95, p99 and failures at 1, 10 and 50 clients over REST).")
    boolean tailsOnly;

    @Option(names = "--density-only", description = "Measure only the idle sandboxes: memory each, and the create and destroy rates,"
            + " up to --max-sandboxes.")
    boolean densityOnly;

    @Option(names = "--interpreter-image", paramLabel = "NAME", description = "The image of the interpreter cases' sandboxes; it"
            + " needs python3-ipykernel, -jupyter-client and -matplotlib (default: system, the host's; 'airlock image build"
            + " python-data' makes one).")
    String interpreterImage = "system";

    @Option(names = "--cluster", paramLabel = "URL", description = "Also measure a cluster of three nodes on this host on this"
            + " PostgreSQL database (postgresql://HOST:PORT/DB?user=U&password=P; docs/cluster.md); needs --cluster-secret.")
    String cluster;

    @Option(names = "--cluster-secret", paramLabel = "FILE", description = "The cluster's secret file, for --cluster.")
    java.nio.file.Path clusterSecret;

    @Option(names = "--cluster-only", description = "Measure only the cluster (with --cluster).")
    boolean clusterOnly;

    @Option(names = "--quick", description = "Fewer repetitions and at most 50 sandboxes: a smoke run, for tests.")
    boolean quick;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Override
    public Integer call() throws Exception {
        int n = runs != null ? runs : quick ? 5 : 30;
        int w = warmup != null ? warmup : quick ? 1 : 5;
        int max = quick ? Math.min(maxSandboxes, QUICK_MAX_SANDBOXES) : maxSandboxes;
        if (n < 3 || n > 10_000 || w < 0 || w > 1000) {
            throw AirlockException.invalid("give --runs from 3 to 10000 and --warmup from 0 to 1000");
        }
        if (clusterOnly && cluster == null) {
            throw AirlockException.invalid("--cluster-only measures a cluster: give --cluster URL and --cluster-secret FILE");
        }
        if ((cluster == null) != (clusterSecret == null)) {
            throw AirlockException.invalid("--cluster and --cluster-secret go together: the database of the cluster to measure, and its"
                    + " secret file");
        }
        if (max < 1 || max > MAX_SANDBOXES) {
            throw AirlockException.invalid("give --max-sandboxes from 1 to " + MAX_SANDBOXES);
        }
        int rounds = quick ? 1 : 3;
        int perClient = quick ? 3 : 15;
        int egressRuns = quick ? 3 : 5;
        int snapshotRuns = quick ? 3 : 7;
        int idleSandboxes = quick ? 3 : 10;
        long settleMillis = quick ? 1000 : 3000;
        int warmUpSeconds = Sampler.warmUpSeconds(quick);
        int[] tailClients = quick ? new int[] {1, 3} : new int[] {1, 10, 50};
        int tailSamples = quick ? 3 : 100;
        OciDriverConfig config = engineOptions.driverConfig();
        List<TierCases.Tier> chosenTiers = TierCases.choose(TierCases.known(config), tiers);
        Map<String, String> method = new LinkedHashMap<>();
        method.put(Stats.LATENCY, String.format("median of %d runs after %d warm-up runs, one request at a time; the server's after %d s"
                + " of unmeasured requests", n, w, warmUpSeconds));
        method.put(TierCases.SECTION, String.format("the latency method; ms, ratio to bare python3 -c pass (exec true: to bare true);"
                + " idle memory: memory cgroup usage, MiB, median over %d fresh sandboxes", idleSandboxes));
        method.put(InterpreterCases.SECTION, "the latency method, in one sandbox of --interpreter-image; ratio: to the row above it,"
                + " the same code as a one-shot python3 -c exec in that sandbox (for a context: the kernel's imports)");
        method.put(ThroughputCases.SECTION, String.format("%d runs per client per round, 1 warm-up round, median of %d round(s); ratio: airlock / bare",
                perClient, rounds));
        method.put(MemoryCases.SECTION, "idle sandboxes at " + MemoryCases.levels(max)
                + ", created and destroyed 4 at a time through one engine, no pool, after " + warmUpSeconds
                + " s of unmeasured creates and destroys; cgroup: median/p10/p90 over sandboxes; host: (MemAvailable"
                + " just before creating them - with them) / N, ratio: host / cgroup median; create rate: N / seconds to create them all,"
                + " ratio: to plain runc run + delete of true one at a time (median of 10); destroy rate: N / seconds to destroy them all,"
                + " ratio: to the create rate");
        method.put(EgressCases.SECTION, String.format("median of %d downloads after 1 warm-up; ratio: time / direct time", egressRuns));
        method.put(SnapshotCases.SECTION, String.format("median of %d runs after 1 warm-up, one at a time over REST, /workspace of %s MiB;"
                + " ratio: to a host copy of the same bytes (snapshot, restore), to as many empty creates (fork), or, for forks of "
                + SnapshotCases.cowMiB(quick) + " MiB shared copy-on-write, to the same forks with the files copied; gVisor memory snapshots"
                + " of a process holding " + SnapshotCases.memoryMiB(quick) + " MiB: ratio to a host copy of the same bytes (snapshot), to as"
                + " many cold creates that fill the same memory (forks of 1 and " + SnapshotCases.forkCount(quick) + "; no warm pool);"
                + " microVM memory snapshots (median of " + (quick ? 1 : 3) + " runs after " + (quick ? 0 : 1) + " warm-up) of a busybox"
                + " guest holding " + SnapshotCases.microvmFillMiB(quick) + " MiB of random bytes in its RAM: ratio to a host copy of the"
                + " guest's RAM (snapshot), to as many cold creates (boots) that fill the same memory (forks), and the host's memory"
                + " (MemAvailable drop, once) of " + SnapshotCases.microvmForkCount(quick) + " forks to that of as many cold guests; the"
                + " microVM warm pool's refill rate (guests/s, once), restored from its booted guest against booted",
                snapshotRuns, SnapshotCases.sizes(quick)));
        method.put(CliCases.SECTION, CliCases.method(n, w, warmUpSeconds));
        if (cluster != null) {
            method.put(ClusterCases.SECTION, ClusterCases.method(quick ? 5 : 20));
        }
        method.put(TailCases.SECTION, String.format("at %s clients, each on its own connection, one request each per wave, all started"
                + " together; waves enough for %d requests per case and level, after 1 warm-up wave, on a full warm pool as large as the"
                + " clients; percentiles of the requests that succeeded", Arrays.toString(tailClients), tailSamples));

        String machine = Baselines.machine();
        if (!json) {
            System.out.println("machine: " + machine);
            if (!cliOnly && !tailsOnly && !clusterOnly && !snapshotsOnly && !densityOnly) {
                System.out.printf("method: median of %d runs after %d warm-up runs, one request at a time%n%n", n, w);
            }
        }
        Progress progress = new Progress();
        Sampler sampler = new Sampler(n, w, progress);
        List<String> notes = new ArrayList<>();
        if (clusterOnly) {
            List<Stats> clusterCases = ClusterCases.measure(sampler, config, cluster, clusterSecret, quick ? 5 : 20);
            print(new Report(machine, Map.of(ClusterCases.SECTION, method.get(ClusterCases.SECTION)), clusterCases, List.of(), List.of(),
                    List.of(), notes));
            return 0;
        }
        if (snapshotsOnly) {
            List<Stats> snapshots = SnapshotCases.measure(progress, config, chosenTiers, snapshotRuns, quick, notes);
            print(new Report(machine, Map.of(SnapshotCases.SECTION, method.get(SnapshotCases.SECTION)), snapshots, List.of(), List.of(),
                    List.of(), notes));
            return 0;
        }
        if (densityOnly) {
            List<Stats> density = MemoryCases.measure(progress, config, max, settleMillis, warmUpSeconds, notes);
            print(new Report(machine, Map.of(MemoryCases.SECTION, method.get(MemoryCases.SECTION)), density, List.of(), List.of(),
                    List.of(), notes));
            return 0;
        }
        if (tailsOnly) {
            List<TailCases.Tail> tails = TailCases.measure(progress, config, tailClients, tailSamples);
            print(new Report(machine, Map.of(TailCases.SECTION, method.get(TailCases.SECTION)), List.of(), List.of(), List.of(), tails, notes));
            return 0;
        }
        // first, before the other sections load this JVM (its own server for run --server is closed when it ends); reported last
        List<Stats> cli = CliCases.measure(progress, n, w, warmUpSeconds, config, notes);
        if (cliOnly) {
            print(new Report(machine, Map.of(CliCases.SECTION, method.get(CliCases.SECTION)), cli, List.of(), List.of(), List.of(), notes));
            return 0;
        }
        Baselines.Results baselines = Baselines.measure(sampler, config);
        List<Stats> latency = new ArrayList<>(baselines.all());
        latency.addAll(EngineCases.warm(sampler, config, baselines, notes));
        latency.addAll(ServerCases.measure(sampler, config, warmUpSeconds));
        latency.add(EngineCases.cold(sampler, config));
        if (image != null) {
            latency.add(EngineCases.coldImage(sampler, config, image));
        }
        // a case that has a baseline of its own (the E2B door's: the same requests over REST) keeps it
        List<Stats> cases = new ArrayList<>(latency.stream().map(s -> s.ratio() != null ? s : s.relativeTo(baselines.bare())).toList());
        List<TierCases.Outcome> tierOutcomes = TierCases.measure(sampler, chosenTiers, baselines, idleSandboxes, settleMillis, notes);
        tierOutcomes.forEach(t -> cases.addAll(t.cases()));
        cases.addAll(InterpreterCases.measure(sampler, config, interpreterImage, notes));
        cases.addAll(ThroughputCases.measure(progress, config, CLIENTS, rounds, perClient));
        cases.addAll(MemoryCases.measure(progress, config, max, settleMillis, warmUpSeconds, notes));
        cases.addAll(EgressCases.measure(progress, config, egressRuns, notes));
        cases.addAll(SnapshotCases.measure(progress, config, chosenTiers, snapshotRuns, quick, notes));
        if (cluster != null) {
            cases.addAll(ClusterCases.measure(sampler, config, cluster, clusterSecret, quick ? 5 : 20));
        }
        cases.addAll(cli);
        List<TailCases.Tail> tails = TailCases.measure(progress, config, tailClients, tailSamples);

        print(new Report(machine, method, cases, TierCases.baselines(baselines), tierOutcomes, tails, notes));
        return 0;
    }

    private void print(Report report) {
        if (json) {
            report.printJson(System.out);
        } else {
            System.out.println();
            report.printTable(System.out);
        }
    }
}
