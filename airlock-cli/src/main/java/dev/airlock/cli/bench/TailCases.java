package dev.airlock.cli.bench;

import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Latency tails under concurrency, through the REST API of a real server: create from the warm
 * pool, the REST one-shot ({@code POST /v1/run}) and time to first command (create, then the
 * first exec: what public sandbox leaderboards time). At each level of concurrency the clients,
 * each with a connection of its own, start one request together per wave; between waves the
 * sandboxes they made are deleted and the pool, as large as the number of clients, refills
 * untimed. A request that fails counts in the failure share, not in the percentiles.
 */
public final class TailCases {

    public static final String SECTION = "tails";

    /**
     * One case at one level of concurrency: percentiles of the requests that succeeded, in ms,
     * and how many of all the requests failed.
     */
    public record Tail(String name, int clients, int requests, int failed, double p50, double p95, double p99, String firstFailure) {

        /** The percentiles of {@code millis} (unsorted; not empty). */
        static Tail of(String name, int clients, List<Double> millis, int failed, String firstFailure) {
            double[] s = millis.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            return new Tail(name, clients, s.length + failed, failed, at(s, 0.50), at(s, 0.95), at(s, 0.99), firstFailure);
        }

        /** The nearest-rank percentile. */
        private static double at(double[] sorted, double q) {
            if (sorted.length == 0) {
                return Double.NaN;
            }
            int rank = (int) Math.ceil(q * sorted.length);
            return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
        }

        public double failedShare() {
            return requests == 0 ? 0 : (double) failed / requests;
        }
    }

    /** What one request of a case does, over its client's connection; returns the sandbox to delete afterwards (null: none). */
    private interface Request {
        Timed run(BenchClient client) throws Exception;
    }

    /** The time a request took, and what to clean up after its wave, untimed. */
    private record Timed(double millis, String sandboxToDelete) {
    }

    private TailCases() {
    }

    /**
     * @param clients the levels of concurrency, such as 1, 10 and 50
     * @param samples the requests of each case at each level, at least (whole waves)
     */
    public static List<Tail> measure(Progress progress, OciDriverConfig driver, int[] clients, int samples) throws Exception {
        List<Tail> tails = new ArrayList<>();
        for (int c : clients) {
            Path dataDir = Files.createTempDirectory("airlock-bench");
            ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(c)
                    .withMaxSandboxes(Math.max(200, 4 * c)).withDriver(driver.toSettings());
            try (AirlockServer server = AirlockServer.start(config)) {
                List<BenchClient> connections = new ArrayList<>();
                for (int i = 0; i < c; i++) {
                    connections.add(new BenchClient(server.uri(), server.token()));
                }
                BenchClient admin = new BenchClient(server.uri(), server.token());
                int waves = Math.max(1, (samples + c - 1) / c);
                tails.add(waves(progress, "create from the warm pool (POST /v1/sandboxes)", connections, admin, waves, client -> {
                    long t0 = System.nanoTime();
                    String id = client.create();
                    return new Timed(millisSince(t0), id);
                }));
                tails.add(waves(progress, "REST one-shot python3 -c pass (POST /v1/run)", connections, admin, waves, client -> {
                    long t0 = System.nanoTime();
                    client.runOnce("python", "pass");
                    return new Timed(millisSince(t0), null);
                }));
                tails.add(waves(progress, "time to first command (create, exec true)", connections, admin, waves, client -> {
                    long t0 = System.nanoTime();
                    String id = client.create();
                    try {
                        client.exec(id, "true");
                    } catch (Exception e) {
                        client.delete(id);
                        throw e;
                    }
                    return new Timed(millisSince(t0), id);
                }));
                admin.awaitPoolReady(c);   // no pool refill cut short by the server's close()
            } finally {
                try (var files = Files.walk(dataDir)) {
                    files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
        }
        return tails;
    }

    /** One unmeasured wave, then {@code waves} measured ones, each on a full pool. */
    private static Tail waves(Progress progress, String name, List<BenchClient> clients, BenchClient admin, int waves, Request request)
            throws Exception {
        int c = clients.size();
        String label = name + ", " + c + " client" + (c == 1 ? "" : "s");
        progress.begin(label, (waves + 1) * c);
        List<Double> millis = new ArrayList<>();
        int failed = 0;
        String firstFailure = null;
        for (int w = -1; w < waves; w++) {
            admin.awaitPoolReady(c);
            List<Object> outcomes = wave(progress, clients, request);
            for (Object o : outcomes) {
                if (o instanceof Timed t) {
                    if (t.sandboxToDelete() != null) {
                        admin.delete(t.sandboxToDelete());
                    }
                    if (w >= 0) {
                        millis.add(t.millis());
                    }
                } else if (w >= 0) {
                    failed++;
                    firstFailure = firstFailure == null ? o.toString() : firstFailure;
                }
            }
        }
        progress.end();
        return Tail.of(name, c, millis, failed, firstFailure);
    }

    /** Every client's request, started together; each outcome is a {@link Timed} or the failure's text. */
    private static List<Object> wave(Progress progress, List<BenchClient> clients, Request request) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<Object>> futures = new ArrayList<>();
            for (BenchClient client : clients) {
                futures.add(threads.submit(() -> {
                    go.await();
                    try {
                        return request.run(client);
                    } catch (Exception e) {
                        return e.toString();
                    } finally {
                        progress.step();
                    }
                }));
            }
            go.countDown();
            List<Object> outcomes = new ArrayList<>();
            for (Future<Object> f : futures) {
                outcomes.add(f.get());
            }
            return outcomes;
        }
    }

    private static double millisSince(long t0) {
        return (System.nanoTime() - t0) / 1e6;
    }
}
