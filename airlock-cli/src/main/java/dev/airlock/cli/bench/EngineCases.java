package dev.airlock.cli.bench;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Language;
import dev.airlock.core.RunRequest;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.airlock.cli.bench.Baselines.PYTHON;
import static dev.airlock.cli.bench.Baselines.check;

/**
 * Latency through the engine, one request at a time on a quiet engine: between two, background
 * destruction and pool refill are allowed to finish, so each figure is the latency a caller sees.
 */
public final class EngineCases {

    static final Duration QUIET = Duration.ofSeconds(30);
    private static final RunRequest PASS = RunRequest.of(Language.PYTHON, "pass");

    private EngineCases() {
    }

    /**
     * One-shot from a warm pool, exec, create; {@code notes} receives the exec overhead over
     * {@code bareTrue}, the bare {@code true} of {@link Baselines#measure}.
     */
    public static List<Stats> warm(Sampler sampler, OciDriverConfig config, Baselines.Results baselines, List<String> notes) throws Exception {
        List<Stats> results = new ArrayList<>();
        SandboxSpec spec = SandboxSpec.defaults();
        try (Engine pooled = new Engine(new OciDriver(config), 1, spec)) {
            // the median and, for the tail goal, the p99 of the same runs
            String name = "airlock one-shot, warm pool: python pass";
            double[] oneShots = sampler.samples(name, () -> check(pooled.run(PASS).result()), () -> pooled.awaitQuiet(QUIET));
            results.add(Stats.of(Stats.LATENCY, name, "ms", oneShots));
            // a tail against bare's tail of the same run; against bare's median it is in the notes
            Stats p99 = Stats.p99(name, oneShots);
            results.add(p99.relativeTo(baselines.bareP99()));
            notes.add(String.format("warm-pool one-shot p99 against bare's median: %.2fx (bare's own p99 is %.2fx its median)",
                    p99.median() / baselines.bare().median(), baselines.bareP99().median() / baselines.bare().median()));
            try (Sandbox sandbox = pooled.create(spec)) {
                results.add(exec(sampler, "airlock exec into a sandbox: python3 -c pass", pooled, sandbox, ExecRequest.of(PYTHON, "-c", "pass")));
                Stats execTrue = execTrue(sampler, "airlock exec into a sandbox: true", pooled, sandbox);
                results.add(execTrue);
                notes.add(String.format("exec overhead over bare `true`: %.2f ms (median)", execTrue.median() - baselines.bareTrue().median()));
            }
            List<Sandbox> created = new ArrayList<>();
            Stats create = sampler.measure("airlock create from warm pool", () -> created.add(pooled.create(spec)), () -> {
                created.forEach(Sandbox::close);
                created.clear();
                pooled.awaitQuiet(QUIET);
            });
            created.forEach(Sandbox::close);
            results.add(create);
            pooled.awaitQuiet(QUIET);   // no pool refill cut short by close()
        }
        return results;
    }

    /** One-shot with no pool: every run creates its sandbox. */
    public static Stats cold(Sampler sampler, OciDriverConfig config) throws Exception {
        return coldOneShot(sampler, "airlock one-shot, cold: python pass", new OciDriver(config));
    }

    /**
     * {@code python pass} one-shot, cold, in a sandbox of the stored image {@code image} (which must
     * have python3): beside {@link #cold}, what starting from an image instead of {@code system} costs.
     */
    public static Stats coldImage(Sampler sampler, OciDriverConfig config, String image) throws Exception {
        RunRequest pass = new RunRequest(Language.PYTHON, "pass", null, new SandboxSpec(image, null, java.util.Map.of()));
        try (Engine cold = new Engine(new OciDriver(config))) {
            return sampler.measure("airlock one-shot, cold, image " + image + ": python pass", () -> check(cold.run(pass).result()),
                    () -> cold.awaitQuiet(QUIET));
        }
    }

    /** {@code python pass} one-shot through an engine of {@code driver} with no pool (the engine closes the driver). */
    static Stats coldOneShot(Sampler sampler, String name, IsolationDriver driver) throws Exception {
        try (Engine cold = new Engine(driver)) {
            return sampler.measure(name, () -> check(cold.run(PASS).result()), () -> cold.awaitQuiet(QUIET));
        }
    }

    /** {@code python pass} one-shot through {@code pooled}, whose pool of the default spec is full before each run. */
    static Stats warmOneShot(Sampler sampler, String name, Engine pooled) throws Exception {
        return sampler.measure(name, () -> check(pooled.run(PASS).result()), () -> pooled.awaitQuiet(QUIET));
    }

    /** {@code true} executed in the running {@code sandbox} of {@code engine}. */
    static Stats execTrue(Sampler sampler, String name, Engine engine, Sandbox sandbox) throws Exception {
        return exec(sampler, name, engine, sandbox, ExecRequest.of("true"));
    }

    /**
     * {@code request} executed in the running {@code sandbox} of {@code engine}, each time on a quiet engine: taking the
     * sandbox from the pool started a refill, which the first executions would otherwise share the host with.
     */
    private static Stats exec(Sampler sampler, String name, Engine engine, Sandbox sandbox, ExecRequest request) throws Exception {
        return sampler.measure(name, () -> check(sandbox.exec(request)), () -> engine.awaitQuiet(QUIET));
    }
}
