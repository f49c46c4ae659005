package dev.airlock.cli;

import dev.airlock.cli.bench.Baselines;
import dev.airlock.cli.bench.EgressCases;
import dev.airlock.cli.bench.EngineCases;
import dev.airlock.cli.bench.MemoryCases;
import dev.airlock.cli.bench.Progress;
import dev.airlock.cli.bench.Report;
import dev.airlock.cli.bench.Sampler;
import dev.airlock.cli.bench.ServerCases;
import dev.airlock.cli.bench.SnapshotCases;
import dev.airlock.cli.bench.Stats;
import dev.airlock.cli.bench.ThroughputCases;
import dev.airlock.cli.bench.TierCases;
import dev.airlock.core.AirlockException;
import dev.airlock.oci.OciDriverConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * {@code airlock bench}: one-shot and exec latency through Airlock, side by side with the same
 * command run bare, under bubblewrap and under plain {@code runc run}, as ratios; then the same
 * few cases under each isolation tier that works here (container, gVisor, microVM); then one-shot
 * throughput with parallel clients, host memory per idle sandbox, and egress proxy throughput.
 * All but the tiers run on the {@code --runtime} tier. The cases themselves live in
 * {@link dev.airlock.cli.bench}.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure latency (also under each isolation tier), throughput, memory per sandbox and egress throughput against bare baselines, in one run.")
final class BenchCommand implements Callable<Integer> {

    private static final int[] CLIENTS = {1, 2, 4, 8};
    private static final int QUICK_MAX_SANDBOXES = 50;

    @Option(names = "--runs", paramLabel = "N", description = "Measured repetitions per latency case (default 30; 5 with --quick).")
    Integer runs;

    @Option(names = "--warmup", paramLabel = "N", description = "Unmeasured repetitions first (default 5; 1 with --quick).")
    Integer warmup;

    @Option(names = "--max-sandboxes", paramLabel = "N",
            description = "Most idle sandboxes for the memory cases: 10, 100, 500 up to N (default 500; at most 50 with --quick).")
    int maxSandboxes = 500;

    @Option(names = "--json", description = "Print one JSON document (machine, method, every case) instead of the tables.")
    boolean json;

    @Option(names = "--tiers", split = ",", paramLabel = "TIER",
            description = "Isolation tiers to compare: container, gvisor, microvm (default: every one; one that does not work here is a note).")
    List<String> tiers;

    @Option(names = "--image", paramLabel = "NAME", description = "Also measure a cold one-shot in this stored image (it must have"
            + " python3), beside the one in 'system' (airlock image ls).")
    String image;

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
        if (max < 1 || max > 2000) {
            throw AirlockException.invalid("give --max-sandboxes from 1 to 2000");
        }
        int rounds = quick ? 1 : 3;
        int perClient = quick ? 3 : 15;
        int egressRuns = quick ? 3 : 5;
        int snapshotRuns = quick ? 3 : 7;
        int idleSandboxes = quick ? 3 : 10;
        long settleMillis = quick ? 1000 : 3000;
        OciDriverConfig config = engineOptions.driverConfig();
        List<TierCases.Tier> chosenTiers = TierCases.choose(TierCases.known(config), tiers);
        Map<String, String> method = new LinkedHashMap<>();
        method.put(Stats.LATENCY, String.format("median of %d runs after %d warm-up runs, one request at a time", n, w));
        method.put(TierCases.SECTION, String.format("the latency method; ms, ratio to bare python3 -c pass (exec true: to bare true);"
                + " idle memory: memory cgroup usage, MiB, median over %d fresh sandboxes", idleSandboxes));
        method.put(ThroughputCases.SECTION, String.format("%d runs per client per round, 1 warm-up round, median of %d round(s); ratio: airlock / bare",
                perClient, rounds));
        method.put(MemoryCases.SECTION, "idle sandboxes at " + MemoryCases.levels(max)
                + "; cgroup: median/p10/p90 over sandboxes; host: (MemAvailable just before creating them - with them) / N, ratio: host / cgroup median");
        method.put(EgressCases.SECTION, String.format("median of %d downloads after 1 warm-up; ratio: time / direct time", egressRuns));
        method.put(SnapshotCases.SECTION, String.format("median of %d runs after 1 warm-up, one at a time over REST, /workspace of %s MiB;"
                + " ratio: to a host copy of the same bytes (snapshot, restore) or to as many empty creates (fork)", snapshotRuns,
                SnapshotCases.sizes(quick)));

        String machine = Baselines.machine();
        if (!json) {
            System.out.println("machine: " + machine);
            System.out.printf("method: median of %d runs after %d warm-up runs, one request at a time%n%n", n, w);
        }
        Progress progress = new Progress();
        Sampler sampler = new Sampler(n, w, progress);
        List<String> notes = new ArrayList<>();
        Baselines.Results baselines = Baselines.measure(sampler, config);
        List<Stats> latency = new ArrayList<>(baselines.all());
        latency.addAll(EngineCases.warm(sampler, config, baselines.bareTrue(), notes));
        latency.addAll(ServerCases.measure(sampler, config));
        latency.add(EngineCases.cold(sampler, config));
        if (image != null) {
            latency.add(EngineCases.coldImage(sampler, config, image));
        }
        List<Stats> cases = new ArrayList<>(latency.stream().map(s -> s.relativeTo(baselines.bare())).toList());
        List<TierCases.Outcome> tierOutcomes = TierCases.measure(sampler, chosenTiers, baselines, idleSandboxes, settleMillis, notes);
        tierOutcomes.forEach(t -> cases.addAll(t.cases()));
        cases.addAll(ThroughputCases.measure(progress, config, CLIENTS, rounds, perClient));
        cases.addAll(MemoryCases.measure(progress, config, max, settleMillis, notes));
        cases.addAll(EgressCases.measure(progress, config, egressRuns, notes));
        cases.addAll(SnapshotCases.measure(progress, config, snapshotRuns, quick));

        Report report = new Report(machine, method, cases, TierCases.baselines(baselines), tierOutcomes, notes);
        if (json) {
            report.printJson(System.out);
        } else {
            System.out.println();
            report.printTable(System.out);
        }
        return 0;
    }
}
