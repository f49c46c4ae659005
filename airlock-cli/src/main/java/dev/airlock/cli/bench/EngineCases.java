package dev.airlock.cli.bench;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
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

    private static final Duration QUIET = Duration.ofSeconds(30);

    private EngineCases() {
    }

    /** One-shot from a warm pool, exec, create; {@code notes} receives the exec overhead over bare true. */
    public static List<Stats> warm(Sampler sampler, OciDriverConfig config, List<String> notes) throws Exception {
        List<Stats> results = new ArrayList<>();
        SandboxSpec spec = SandboxSpec.defaults();
        RunRequest pass = RunRequest.of(Language.PYTHON, "pass");
        try (Engine pooled = new Engine(new OciDriver(config), 1, spec)) {
            results.add(sampler.measure("airlock one-shot, warm pool: python pass", () -> {
                pooled.awaitQuiet(QUIET);
                check(pooled.run(pass).result());
            }, () -> pooled.awaitQuiet(QUIET)));
            try (Sandbox sandbox = pooled.create(spec)) {
                results.add(sampler.measure("airlock exec into a sandbox: python3 -c pass",
                        () -> check(sandbox.exec(ExecRequest.of(PYTHON, "-c", "pass")))));
                Stats bareTrue = sampler.measure("bare: true", () -> Baselines.command("/usr/bin/true"));
                Stats execTrue = sampler.measure("airlock exec into a sandbox: true", () -> check(sandbox.exec(ExecRequest.of("true"))));
                results.add(bareTrue);
                results.add(execTrue);
                notes.add(String.format("exec overhead over bare `true`: %.2f ms (median)", execTrue.median() - bareTrue.median()));
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
        RunRequest pass = RunRequest.of(Language.PYTHON, "pass");
        try (Engine cold = new Engine(new OciDriver(config))) {
            return sampler.measure("airlock one-shot, cold: python pass", () -> {
                cold.awaitQuiet(QUIET);
                check(cold.run(pass).result());
            });
        }
    }
}
