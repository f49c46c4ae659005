package dev.airlock.cli;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.RunRequest;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.RuncBaseline;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.ServerConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code airlock bench}: one-shot and exec latency through Airlock, side by side with the same
 * command run bare, under bubblewrap and under plain {@code runc run}, in one run, as ratios.
 * Requests are measured one at a time on a quiet engine: between two, background destruction
 * and pool refill are allowed to finish, so each figure is the latency a caller sees.
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Measure one-shot and exec latency against bare, bubblewrap and runc baselines, in one run.")
final class BenchCommand implements Callable<Integer> {

    private static final String PYTHON = "/usr/bin/python3";

    @Option(names = "--runs", paramLabel = "N", description = "Measured repetitions per case (default 30).")
    int runs = 30;

    @Option(names = "--warmup", paramLabel = "N", description = "Unmeasured repetitions first (default 5).")
    int warmup = 5;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    private record Stats(String name, double median, double p10, double p90) {
    }

    @FunctionalInterface
    private interface Case {
        void once() throws Exception;
    }

    @Override
    public Integer call() throws Exception {
        if (runs < 3 || runs > 10_000 || warmup < 0 || warmup > 1000) {
            throw dev.airlock.core.AirlockException.invalid("give --runs from 3 to 10000 and --warmup from 0 to 1000");
        }
        System.out.println("machine: " + machine());
        System.out.printf("method: median of %d runs after %d warm-up runs, one request at a time%n%n", runs, warmup);
        List<Stats> results = new ArrayList<>();

        Stats bare = measure("bare: python3 -c pass", () -> command(PYTHON, "-c", "pass"));
        results.add(bare);
        if (Files.isExecutable(Path.of("/usr/bin/bwrap"))) {
            results.add(measure("bubblewrap: python3 -c pass", () -> command(bwrap(PYTHON, "-c", "pass"))));
        }
        try (RuncBaseline runc = new RuncBaseline(engineOptions.driverConfig(), List.of(PYTHON, "-c", "pass"))) {
            results.add(measure("runc run (same bundle, cold): python3 -c pass", runc::runOnce));
        }
        SandboxSpec spec = SandboxSpec.defaults();
        RunRequest pass = RunRequest.of(Language.PYTHON, "pass");
        try (Engine pooled = new Engine(new OciDriver(engineOptions.driverConfig()), 1, spec)) {
            results.add(measure("airlock one-shot, warm pool: python pass", () -> {
                pooled.awaitQuiet(Duration.ofSeconds(30));
                check(pooled.run(pass).result());
            }, () -> pooled.awaitQuiet(Duration.ofSeconds(30))));
            try (Sandbox sandbox = pooled.create(spec)) {
                results.add(measure("airlock exec into a sandbox: python3 -c pass",
                        () -> check(sandbox.exec(ExecRequest.of(PYTHON, "-c", "pass")))));
                Stats bareTrue = measure("bare: true", () -> command("/usr/bin/true"));
                Stats execTrue = measure("airlock exec into a sandbox: true", () -> check(sandbox.exec(ExecRequest.of("true"))));
                results.add(bareTrue);
                results.add(execTrue);
                System.out.printf("%nexec overhead over bare `true`: %.2f ms (median)%n", execTrue.median() - bareTrue.median());
            }
            List<Sandbox> created = new ArrayList<>();
            Stats create = measure("airlock create from warm pool", () -> created.add(pooled.create(spec)), () -> {
                created.forEach(Sandbox::close);
                created.clear();
                pooled.awaitQuiet(Duration.ofSeconds(30));
            });
            created.forEach(Sandbox::close);
            results.add(create);
        }
        results.addAll(serverCases(bare));
        try (Engine cold = new Engine(new OciDriver(engineOptions.driverConfig()))) {
            results.add(measure("airlock one-shot, cold: python pass", () -> {
                cold.awaitQuiet(Duration.ofSeconds(30));
                check(cold.run(pass).result());
            }));
        }

        System.out.printf("%n%-52s %9s %9s %9s %8s%n", "case", "median ms", "p10 ms", "p90 ms", "x bare");
        for (Stats s : results) {
            System.out.printf(Locale.ROOT, "%-52s %9.2f %9.2f %9.2f %8.2f%n", s.name(), s.median(), s.p10(), s.p90(),
                    s.median() / bare.median());
        }
        return 0;
    }

    /** The same requests through the REST API of a real server on a loopback socket. */
    private List<Stats> serverCases(Stats bare) throws Exception {
        List<Stats> stats = new ArrayList<>();
        Path dataDir = Files.createTempDirectory("airlock-bench");
        ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(1)
                .withDriver(engineOptions.driverConfig());
        try (AirlockServer server = AirlockServer.start(config)) {
            BenchClient client = new BenchClient(server.uri(), server.token());
            Case quiet = () -> client.awaitPoolReady();
            List<String> created = new ArrayList<>();
            stats.add(measure("server: create from warm pool (POST /v1/sandboxes)", () -> created.add(client.create()), () -> {
                for (String id : created) {
                    client.delete(id);
                }
                created.clear();
                quiet.once();
            }));
            for (String id : created) {
                client.delete(id);
            }
            String id = client.create();
            stats.add(measure("server: exec true (POST .../exec)", () -> client.exec(id, "true")));
            stats.add(measure("server: exec python3 -c pass", () -> client.exec(id, PYTHON, "-c", "pass")));
            client.delete(id);
            stats.add(measure("server: one-shot python3 -c pass (create, exec, delete)", () -> {
                String one = client.create();
                client.exec(one, PYTHON, "-c", "pass");
                client.delete(one);
            }, quiet));
        } finally {
            try (var files = Files.walk(dataDir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return stats;
    }

    private Stats measure(String name, Case c) throws Exception {
        return measure(name, c, null);
    }

    /** Times {@code c}; {@code settle} runs before each repetition, untimed. */
    private Stats measure(String name, Case c, Case settle) throws Exception {
        System.err.print("measuring " + name + " ");
        double[] ms = new double[runs];
        for (int i = 0; i < warmup + runs; i++) {
            if (settle != null) {
                settle.once();
            }
            long t0 = System.nanoTime();
            c.once();
            long t1 = System.nanoTime();
            if (i >= warmup) {
                ms[i - warmup] = (t1 - t0) / 1e6;
            }
            if (i % 5 == 0) {
                System.err.print(".");
            }
        }
        System.err.println();
        Arrays.sort(ms);
        return new Stats(name, ms[ms.length / 2], ms[ms.length / 10], ms[ms.length * 9 / 10]);
    }

    private static void check(ExecResult r) {
        if (r.exitCode() != 0) {
            throw new IllegalStateException("benchmark command failed: exit " + r.exitCode() + " " + r.stderrText());
        }
    }

    private static void command(String... argv) throws IOException, InterruptedException {
        command(List.of(argv));
    }

    private static void command(List<String> argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).redirectInput(new File("/dev/null"))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", argv) + " exited with " + p.exitValue());
        }
    }

    /** bubblewrap with comparable isolation: every namespace, read-only /usr, fresh /tmp and /proc. */
    private static List<String> bwrap(String... argv) {
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/bwrap", "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "--new-session"));
        cmd.addAll(List.of(argv));
        return cmd;
    }

    private static String machine() {
        String cpu = "unknown cpu";
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .findFirst().map(l -> l.substring(l.indexOf(':') + 1).trim()).orElse(cpu);
        } catch (IOException ignored) {
            // the CPU model is informative only
        }
        return Runtime.getRuntime().availableProcessors() + " cores, " + cpu + ", Linux " + System.getProperty("os.version")
                + ", Java " + Runtime.version();
    }
}
