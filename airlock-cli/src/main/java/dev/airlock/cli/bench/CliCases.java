package dev.airlock.cli.bench;

import dev.airlock.cli.AirlockCli;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static dev.airlock.cli.bench.Baselines.PYTHON;

/**
 * The CLI one-shot as a user types it, {@code bin/airlock run --lang python --code pass} (a JVM, an
 * engine, one sandbox) and {@code run --server} (a JVM asking a running server, whose warm pool takes
 * the code), beside the same program bare and under Anthropic's sandbox-runtime
 * ({@code srt -c 'python3 -c pass'}, when srt is installed; it is a baseline, never required). The
 * commands take turns, one of each per round, so that a change in the host's load weighs on all
 * of them alike; the ratios are to bare and, for the CLI, also to srt.
 *
 * <p>Measured only when the benchmark itself runs from the built jar beside {@code bin/airlock}
 * ({@code bin/airlock bench}): from class directories (the tests) bin/airlock would first rebuild
 * the project, so the section is then a note. An untimed run of each with {@code AIRLOCK_AOT=foreground}
 * first lets bin/airlock train its AOT caches ({@code run}'s and {@code run --server}'s), so no
 * training runs beside the measured ones.
 */
public final class CliCases {

    public static final String SECTION = "cli";
    static final String BARE = "cli: bare python3 -c pass";
    static final String SRT = "cli: srt -c 'python3 -c pass' (sandbox-runtime)";
    static final String AIRLOCK = "cli: bin/airlock run --lang python --code pass";
    static final String AIRLOCK_VS_SRT = "cli: bin/airlock run, ratio to srt";
    static final String ON_SERVER = "cli: bin/airlock run --server --lang python --code pass (a running server)";
    static final String ON_SERVER_VS_SRT = "cli: bin/airlock run --server, ratio to srt";
    private static final long COMMAND_TIMEOUT_SECONDS = 120;

    private CliCases() {
    }

    /** The method line of this section. */
    public static String method(int runs, int warmup, int serverWarmUpSeconds) {
        return String.format("%d rounds after %d warm-up rounds, each command once per round in turn; ms; ratio: to bare"
                + " (the rows 'ratio to srt': to srt); --server: a server of this JVM on loopback, its pool of 1 full again before the"
                + " next command, after %d s of unmeasured runs on it", runs, warmup, serverWarmUpSeconds);
    }

    /** Measures the section, or adds a note to {@code notes} saying why it was not measured. */
    public static List<Stats> measure(Progress progress, int runs, int warmup, int serverWarmUpSeconds, OciDriverConfig driver,
                                      List<String> notes) throws Exception {
        Path airlock = binAirlock();
        if (airlock == null) {
            notes.add("cli: not measured: the benchmark runs from " + codeSource() + ", not from the built jar beside bin/airlock"
                    + " (run it as bin/airlock bench)");
            return List.of();
        }
        Map<String, List<String>> commands = new LinkedHashMap<>();
        commands.put(BARE, List.of(PYTHON, "-c", "pass"));
        commands.put(AIRLOCK, List.of(airlock.toString(), "run", "--lang", "python", "--code", "pass"));
        Path srt = onPath("srt");
        if (srt == null) {
            notes.add("cli: srt not measured: it is not installed (npm install -g @anthropic-ai/sandbox-runtime; it needs socat and"
                    + " ripgrep)");
        } else {
            String failure = run(List.of(srt.toString(), "-c", PYTHON + " -c pass"), Map.of());
            if (failure == null) {
                commands.put(SRT, List.of(srt.toString(), "-c", PYTHON + " -c pass"));
                notes.add("cli: srt is " + srt + ", version " + version(srt));
            } else {
                notes.add("cli: srt not measured: " + failure);
            }
        }
        String failure = run(commands.get(AIRLOCK), Map.of("AIRLOCK_AOT", "foreground"));
        if (failure != null) {
            notes.add("cli: not measured: " + failure);
            return List.of();
        }

        Path dataDir = Files.createTempDirectory("airlock-bench-cli");
        Map<String, double[]> samples = new LinkedHashMap<>();
        try (AirlockServer server = AirlockServer.start(ServerConfig.defaults().withPort(0).withE2bPort(ServerConfig.E2B_OFF)
                .withDataDir(dataDir).withPoolSize(1).withDriver(driver.toSettings()))) {
            BenchClient client = new BenchClient(server.uri(), server.token());
            commands.put(ON_SERVER, List.of(airlock.toString(), "run", "--server", "--url", server.uri().toString(), "--token-file",
                    dataDir.resolve("token").toString(), "--lang", "python", "--code", "pass"));
            String untrained = run(commands.get(ON_SERVER), Map.of("AIRLOCK_AOT", "foreground"));
            if (untrained != null) {
                throw new IllegalStateException("benchmark command failed: " + untrained);
            }
            Sampler.warmUp(progress, "cli: the server for run --server", serverWarmUpSeconds, () -> {
                String one = client.create();
                client.exec(one, PYTHON, "-c", "pass");
                client.delete(one);
            });
            commands.keySet().forEach(name -> samples.put(name, new double[runs]));
            progress.begin("cli: " + String.join(", ", commands.keySet().stream().map(n -> n.substring(5)).toList()), warmup + runs);
            for (int round = 0; round < warmup + runs; round++) {
                for (Map.Entry<String, List<String>> c : commands.entrySet()) {
                    client.awaitPoolReady();   // the server's refill is done: it weighs on no command measured
                    long t0 = System.nanoTime();
                    String failed = run(c.getValue(), Map.of());
                    long t1 = System.nanoTime();
                    if (failed != null) {
                        throw new IllegalStateException("benchmark command failed: " + failed);
                    }
                    if (round >= warmup) {
                        samples.get(c.getKey())[round - warmup] = (t1 - t0) / 1e6;
                    }
                }
                progress.step();
            }
            progress.end();
            client.awaitPoolReady();   // no refill cut short by the server's close
        } finally {
            try (var files = Files.walk(dataDir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }

        Stats bare = Stats.of(SECTION, BARE, "ms", samples.get(BARE));
        List<Stats> results = new ArrayList<>(List.of(bare));
        Stats srtStats = samples.containsKey(SRT) ? Stats.of(SECTION, SRT, "ms", samples.get(SRT)) : null;
        if (srtStats != null) {
            results.add(srtStats.relativeTo(bare));
        }
        for (String[] rows : new String[][] {{AIRLOCK, AIRLOCK_VS_SRT}, {ON_SERVER, ON_SERVER_VS_SRT}}) {
            Stats cli = Stats.of(SECTION, rows[0], "ms", samples.get(rows[0]));
            results.add(cli.relativeTo(bare));
            if (srtStats != null) {
                Stats vsSrt = cli.relativeTo(srtStats);
                results.add(new Stats(SECTION, rows[1], vsSrt.median(), vsSrt.p10(), vsSrt.p90(), vsSrt.unit(), vsSrt.baseline(),
                        vsSrt.ratio()));
            }
        }
        return results;
    }

    /** bin/airlock of the install whose built jar this runs from, or null when it runs from elsewhere (class directories). */
    static Path binAirlock() {
        Path jar = codeSource();
        if (jar == null || !jar.getFileName().toString().endsWith(".jar") || jar.getParent() == null
                || jar.getParent().getParent() == null || jar.getParent().getParent().getParent() == null) {
            return null;
        }
        Path airlock = jar.getParent().getParent().getParent().resolve("bin").resolve("airlock");
        return Files.isExecutable(airlock) ? airlock : null;
    }

    private static Path codeSource() {
        try {
            return Path.of(AirlockCli.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException | RuntimeException e) {
            return null;
        }
    }

    private static Path onPath(String program) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, program))) {
                return Path.of(dir, program);
            }
        }
        return null;
    }

    /** Runs {@code argv} with its output discarded; null when it exited 0, else what went wrong. */
    private static String run(List<String> argv, Map<String, String> env) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(argv).redirectInput(new File("/dev/null"))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.PIPE);
        pb.environment().putAll(env);
        Process p = pb.start();
        byte[] err = p.getErrorStream().readNBytes(4096);
        p.getErrorStream().close();
        if (!p.waitFor(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            return String.join(" ", argv) + " did not finish within " + COMMAND_TIMEOUT_SECONDS + "s";
        }
        if (p.exitValue() != 0) {
            String message = new String(err, StandardCharsets.UTF_8).strip();
            return String.join(" ", argv) + " exited with " + p.exitValue() + (message.isEmpty() ? "" : ": " + message);
        }
        return null;
    }

    private static String version(Path program) {
        try {
            Process p = new ProcessBuilder(program.toString(), "--version").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readNBytes(200), StandardCharsets.UTF_8).strip();
            p.waitFor(10, TimeUnit.SECONDS);
            return out.isEmpty() ? "unknown" : out.lines().findFirst().orElse("unknown");
        } catch (IOException e) {
            return "unknown";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }
}
