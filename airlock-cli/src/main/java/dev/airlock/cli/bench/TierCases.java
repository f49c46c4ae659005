package dev.airlock.cli.bench;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.OciDriverConfig;

import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The isolation tiers side by side, in the same run as the bare baselines: for each tier, a cold
 * one-shot (no pool), a one-shot from a warm pool, {@code true} executed in a running sandbox, and
 * the memory of an idle sandbox. A tier's driver comes from the installed providers ({@link
 * DriverProvider#openTier}), so a new driver module's tier is measured with no change here.
 * Whether a tier works here is decided as {@code airlock doctor} does, by starting a sandbox and
 * running a command in it; one that does not work is reported with the reason, not measured, and
 * is no failure of the benchmark.
 */
public final class TierCases {

    public static final String SECTION = "tiers";

    /** One tier: the isolation its sandboxes must get, and the configured driver settings its driver derives from. */
    public record Tier(Isolation isolation, DriverSettings base) {

        /** The tier's name, as profiles name it: {@code container}, {@code gvisor}, {@code microvm}. */
        public String name() {
            return isolation.id();
        }

        /** A driver of this tier, as a server would open it for a profile that requires the tier. */
        IsolationDriver open() {
            return DriverProvider.openTier(isolation, base);
        }
    }

    /**
     * What became of one tier in this run.
     *
     * @param tier   the tier's name
     * @param driver the driver's own name ({@link IsolationDriver#name()}), or its settings' driver name when it did not open
     * @param works  whether a sandbox started and ran a command, and so the tier was measured
     * @param detail what the probe saw: why the tier does not work, when it does not
     * @param cases  the tier's cases (none when it does not work)
     */
    public record Outcome(String tier, String driver, boolean works, String detail, List<Stats> cases) {
    }

    private TierCases() {
    }

    /**
     * Every tier, weakest first: the container (the OCI driver on runc), gVisor (the OCI driver on
     * runsc) and the microVM (its own driver, when its module is on the class path). The OCI tiers
     * keep {@code oci}'s other settings (state directory, host ids).
     */
    public static List<Tier> known(OciDriverConfig oci) {
        DriverSettings base = oci.toSettings();
        return java.util.Arrays.stream(Isolation.values()).map(i -> new Tier(i, base)).toList();
    }

    /**
     * The tiers of {@code known} that {@code names} names, in {@code known}'s order; all of them
     * when {@code names} is null or empty.
     *
     * @throws AirlockException if a name is no tier's
     */
    public static List<Tier> choose(List<Tier> known, List<String> names) {
        if (names == null || names.isEmpty()) {
            return known;
        }
        List<String> all = known.stream().map(Tier::name).toList();
        for (String name : names) {
            if (!all.contains(name)) {
                throw AirlockException.invalid("--tiers: there is no tier '" + name + "': choose among " + String.join(", ", all)
                        + ", separated by commas");
            }
        }
        return known.stream().filter(t -> names.contains(t.name())).toList();
    }

    /**
     * Measures each of {@code tiers} that works here. Latency cases are compared to the bare
     * baselines of {@code base}; the memory case is the memory cgroup usage of {@code idle} fresh
     * idle sandboxes, read {@code settleMillis} after they were all created.
     */
    public static List<Outcome> measure(Sampler sampler, List<Tier> tiers, Baselines.Results base, int idle, long settleMillis,
                                        List<String> notes) throws Exception {
        List<Outcome> outcomes = new ArrayList<>();
        for (Tier tier : tiers) {
            Outcome probe = probe(sampler.progress(), tier);
            if (!probe.works()) {
                notes.add("tiers: " + tier.name() + " not measured: " + probe.detail());
                outcomes.add(probe);
                continue;
            }
            outcomes.add(new Outcome(probe.tier(), probe.driver(), true, probe.detail(),
                    cases(sampler, tier, base, idle, settleMillis, notes)));
        }
        return outcomes;
    }

    /**
     * The baselines the tiers are compared to, as the tiers table shows them: bare and bubblewrap
     * {@code python3 -c pass} (ratio to bare), and bare {@code true} (ratio to itself: the exec cases' baseline).
     */
    public static List<Stats> baselines(Baselines.Results base) {
        List<Stats> rows = new ArrayList<>(List.of(base.bare().relativeTo(base.bare())));
        if (base.bubblewrap() != null) {
            rows.add(base.bubblewrap().relativeTo(base.bare()));
        }
        rows.add(base.bareTrue().relativeTo(base.bareTrue()));
        return rows;
    }

    /** Whether {@code tier} works here: its driver opens, gives the tier, starts a sandbox and runs {@code true} in it. */
    static Outcome probe(Progress progress, Tier tier) {
        progress.begin(tier.name() + ": does it work here? (starting a sandbox)", 1);
        try {
            IsolationDriver driver;
            try {
                driver = tier.open();
            } catch (RuntimeException e) {
                return new Outcome(tier.name(), "none", false, e.getMessage(), List.of());
            }
            String name = driver.name();
            if (driver.isolation() != tier.isolation()) {
                driver.close();
                return new Outcome(tier.name(), name, false, "driver " + name + " gives " + driver.isolation().id() + ", not "
                        + tier.name(), List.of());
            }
            Engine engine;
            try {
                engine = new Engine(driver);
            } catch (RuntimeException e) {
                driver.close();
                return new Outcome(tier.name(), name, false, "driver " + name + " did not start: " + e.getMessage(), List.of());
            }
            try (engine; Sandbox sandbox = engine.create(SandboxSpec.defaults())) {
                ExecResult r = sandbox.exec(ExecRequest.of("true"));
                return r.exitCode() == 0
                        ? new Outcome(tier.name(), name, true, "started a sandbox and ran true in it", List.of())
                        : new Outcome(tier.name(), name, false, "a sandbox started but true exited with " + r.exitCode() + ": "
                                + r.stderrText().trim(), List.of());
            } catch (RuntimeException e) {
                return new Outcome(tier.name(), name, false, "cannot start a sandbox: " + e.getMessage(), List.of());
            }
        } finally {
            progress.step();
            progress.end();
        }
    }

    private static List<Stats> cases(Sampler sampler, Tier tier, Baselines.Results base, int idle, long settleMillis,
                                     List<String> notes) throws Exception {
        String t = tier.name() + ": ";
        List<Stats> cases = new ArrayList<>();
        cases.add(EngineCases.coldOneShot(sampler, t + "one-shot, cold (no pool): python pass", tier.open())
                .relativeTo(base.bare()));
        SandboxSpec spec = SandboxSpec.defaults();
        try (Engine pooled = new Engine(tier.open(), 1, spec)) {
            cases.add(EngineCases.warmOneShot(sampler, t + "one-shot, warm pool: python pass", pooled).relativeTo(base.bare()));
            try (Sandbox sandbox = pooled.create(spec)) {
                cases.add(EngineCases.execTrue(sampler, t + "exec true into a running sandbox", pooled, sandbox).relativeTo(base.bareTrue()));
            }
            pooled.awaitQuiet(EngineCases.QUIET);
            Stats memory = idleMemory(sampler.progress(), t + "idle memory per sandbox (memory cgroup), MiB", pooled, idle, settleMillis,
                    notes);
            if (memory != null) {
                cases.add(memory);
            }
            pooled.awaitQuiet(EngineCases.QUIET);   // no pool refill cut short by close()
        }
        return cases.stream().map(s -> s.in(SECTION)).collect(Collectors.toCollection(ArrayList::new));
    }

    /** The memory cgroup usage of {@code count} fresh idle sandboxes; null, and a note, when they have no memory cgroup. */
    private static Stats idleMemory(Progress progress, String name, Engine engine, int count, long settleMillis, List<String> notes)
            throws Exception {
        List<Sandbox> sandboxes = new ArrayList<>();
        progress.begin(name + " (" + count + " sandboxes)", count);
        try {
            for (int i = 0; i < count; i++) {
                sandboxes.add(engine.create(SandboxSpec.defaults()));
                progress.step();
            }
            progress.note("settling");
            Thread.sleep(settleMillis);
            return Stats.of(SECTION, name, "MiB", MemoryCases.cgroupUsage(sandboxes));
        } catch (NoSuchFileException e) {
            notes.add("tiers: " + name + ": not measured, its sandboxes have no memory cgroup of their own (" + e.getFile() + ")");
            return null;
        } finally {
            progress.end();
            sandboxes.forEach(Sandbox::close);
        }
    }
}
