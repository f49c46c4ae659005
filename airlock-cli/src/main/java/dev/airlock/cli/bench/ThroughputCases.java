package dev.airlock.cli.bench;

import dev.airlock.core.Engine;
import dev.airlock.core.Language;
import dev.airlock.core.RunRequest;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.airlock.cli.bench.Baselines.PYTHON;
import static dev.airlock.cli.bench.Baselines.check;

/**
 * One-shot runs per second with several clients at once: {@code python3 -c pass} through
 * {@link Engine#run} (warm pool as large as the number of clients), and the same bare. Each round
 * every client makes {@code perClient} runs back to back; a round's figure is all its runs divided
 * by its wall-clock time; the case is the median over rounds.
 */
public final class ThroughputCases {

    public static final String SECTION = "throughput";

    private ThroughputCases() {
    }

    public static List<Stats> measure(Progress progress, OciDriverConfig config, int[] clients, int rounds, int perClient) throws Exception {
        List<Stats> results = new ArrayList<>();
        RunRequest pass = RunRequest.of(Language.PYTHON, "pass");
        for (int p : clients) {
            String bareName = "bare: python3 -c pass, " + p + " parallel";
            progress.begin(bareName, (rounds + 1) * p * perClient);
            Stats bare = rounds(bareName, progress, p, rounds, perClient, () -> Baselines.command(PYTHON, "-c", "pass"), () -> { });
            progress.end();
            results.add(bare);
            String name = "airlock one-shot, warm pool " + p + ": python pass, " + p + " parallel";
            try (Engine engine = new Engine(new OciDriver(config), p, SandboxSpec.defaults())) {
                progress.begin(name, (rounds + 1) * p * perClient);
                Stats airlock = rounds(name, progress, p, rounds, perClient, () -> check(engine.run(pass).result()),
                        () -> engine.awaitQuiet(Duration.ofSeconds(60)));
                progress.end();
                results.add(airlock.relativeTo(bare));
                engine.awaitQuiet(Duration.ofSeconds(60));   // no pool refill cut short by close()
            }
        }
        return results;
    }

    /** One unmeasured round, then {@code rounds} measured ones, each after {@code settle}. */
    private static Stats rounds(String name, Progress progress, int clients, int rounds, int perClient, Sampler.Case run,
                                Sampler.Case settle) throws Exception {
        double[] perSecond = new double[rounds];
        for (int r = -1; r < rounds; r++) {
            settle.once();
            double rps = round(progress, clients, perClient, run);
            if (r >= 0) {
                perSecond[r] = rps;
            }
        }
        return Stats.of(SECTION, name, "runs/s", perSecond);
    }

    private static double round(Progress progress, int clients, int perClient, Sampler.Case run) throws Exception {
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            long t0 = System.nanoTime();
            List<Future<Void>> futures = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                futures.add(threads.submit(() -> {
                    for (int i = 0; i < perClient; i++) {
                        run.once();
                        progress.step();
                    }
                    return null;
                }));
            }
            for (Future<Void> f : futures) {
                f.get();
            }
            return clients * perClient / ((System.nanoTime() - t0) / 1e9);
        }
    }
}
