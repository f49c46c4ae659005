package dev.airlock.server.live;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.Engine;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.SandboxBroker;
import dev.airlock.core.SandboxSpec;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;

import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The engines of one server, one per isolation tier its policy uses: the configured driver's (the
 * primary, for profiles that name no tier) and, for each tier a profile requires that the primary
 * does not give, a driver of that tier from the installed providers ({@link
 * DriverProvider#openTier}). A profile that requires a tier this host cannot give stops the start
 * with one sentence, rather than failing at every create.
 */
public final class Tiers implements AutoCloseable {

    private final Engine primary;
    private final Map<Isolation, Engine> engines;

    private Tiers(Engine primary, Map<Isolation, Engine> engines) {
        this.primary = primary;
        this.engines = engines;
    }

    /** Just {@code engine}: a server whose profiles all run on its tier. */
    public static Tiers of(Engine engine) {
        Map<Isolation, Engine> engines = new EnumMap<>(Isolation.class);
        engines.put(engine.driver().isolation(), engine);
        return new Tiers(engine, engines);
    }

    /**
     * Starts the primary driver of {@code settings} and one driver for every other tier a profile of
     * {@code policy} requires, each behind an engine with {@code poolSize} warm sandboxes; on failure
     * nothing is left running.
     */
    public static Tiers open(Policy policy, DriverSettings settings, SandboxBroker broker, int poolSize) {
        Map<Isolation, Engine> engines = new EnumMap<>(Isolation.class);
        try {
            Engine primary = engine(DriverProvider.open(settings), broker, poolSize);
            engines.put(primary.driver().isolation(), primary);
            for (Profile p : policy.profiles().values()) {
                Isolation tier = p.isolation();
                if (tier == null || engines.containsKey(tier)) {
                    continue;
                }
                IsolationDriver driver;
                try {
                    driver = DriverProvider.openTier(tier, settings);
                } catch (AirlockException e) {
                    throw AirlockException.unavailable("profile '" + p.name() + "' requires isolation " + tier.id() + " (rule "
                            + p.rule("isolation") + "), which this host cannot give: " + e.getMessage()
                            + "; run `airlock doctor` to see which tiers work here, or change the profile's isolation");
                }
                engines.put(tier, engine(driver, broker, poolSize));
            }
            return new Tiers(primary, engines);
        } catch (RuntimeException e) {
            engines.values().forEach(Engine::close);
            throw e;
        }
    }

    private static Engine engine(IsolationDriver driver, SandboxBroker broker, int poolSize) {
        try {
            return new Engine(driver, broker, poolSize, SandboxSpec.defaults());
        } catch (RuntimeException e) {
            driver.close();
            throw e;
        }
    }

    /** The configured driver's engine: profiles that name no tier run here. */
    public Engine primary() {
        return primary;
    }

    /** The engine whose sandboxes {@code profile} gets. */
    public Engine forProfile(Profile profile) {
        return profile.isolation() == null ? primary : forTier(profile.isolation());
    }

    /** The engine of {@code tier}, which this server runs (a sandbox's own tier, or one a profile requires). */
    public Engine forTier(Isolation tier) {
        Engine e = engines.get(tier);
        if (e == null) {
            throw new IllegalStateException("this server runs no engine of isolation " + tier.id() + ", only " + engines.keySet());
        }
        return e;
    }

    /** Every engine, the primary first. */
    public Collection<Engine> all() {
        List<Engine> all = new ArrayList<>();
        all.add(primary);
        engines.values().stream().filter(e -> e != primary).forEach(all::add);
        return all;
    }

    /** Whether a driver instance named {@code instance} still runs, as any of this server's drivers can tell. */
    public boolean isAlive(String instance) {
        return all().stream().anyMatch(e -> e.driver().isAlive(instance));
    }

    /** Warm sandboxes ready, over every tier. */
    public int warmPoolReady() {
        return all().stream().mapToInt(Engine::warmPoolReady).sum();
    }

    /** Sandboxes every engine is tearing down in the background. */
    public int tearingDown() {
        return all().stream().mapToInt(Engine::tearingDownCount).sum();
    }

    /** What the engines reaped when they started, one line each. */
    public List<String> reapedAtStart() {
        return all().stream().flatMap(e -> e.reapedAtStart().stream()).toList();
    }

    @Override
    public void close() {
        RuntimeException first = null;
        for (Engine e : all()) {
            try {
                e.close();
            } catch (RuntimeException x) {
                if (first == null) {
                    first = x;
                } else {
                    first.addSuppressed(x);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
