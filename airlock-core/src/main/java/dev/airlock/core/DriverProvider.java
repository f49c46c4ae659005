package dev.airlock.core;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/**
 * Starts one kind of isolation driver, by name: the server chooses its driver at wiring time with
 * {@link #open(DriverSettings)} and so depends on no driver module. A driver module registers its
 * provider in {@code META-INF/services/dev.airlock.core.DriverProvider}.
 */
public interface DriverProvider {

    /** The name settings choose this driver by, such as {@code oci}. */
    String name();

    /**
     * Starts a driver instance with {@code settings} (whose {@code driver} is this provider's name).
     *
     * @throws AirlockException if an option is unknown or out of range; the message names it
     */
    IsolationDriver create(DriverSettings settings);

    /**
     * The settings of a driver of this provider that gives {@code tier}, derived from {@code base}
     * (the server's configured driver: its shared options, such as where state lives, carry over
     * when {@code base} names this provider); null when this provider has no driver of that tier.
     */
    default DriverSettings settingsFor(Isolation tier, DriverSettings base) {
        return null;
    }

    /**
     * Starts the driver that {@code settings} names, found among the providers on the class path.
     *
     * @throws AirlockException if no provider has that name; the message lists those there are
     */
    /**
     * Starts a driver that gives {@code tier}, from the first provider on the class path that has
     * one ({@link #settingsFor}), with {@code base}'s protected paths.
     *
     * @throws AirlockException if no installed provider has a driver of that tier, or the one found
     *                          cannot start on this host; the message says which and why
     */
    static IsolationDriver openTier(Isolation tier, DriverSettings base) {
        List<String> available = new ArrayList<>();
        for (DriverProvider provider : ServiceLoader.load(DriverProvider.class, DriverProvider.class.getClassLoader())) {
            DriverSettings settings = provider.settingsFor(tier, base);
            if (settings != null) {
                IsolationDriver driver = provider.create(new DriverSettings(settings.driver(), settings.options(), base.protectedPaths()));
                if (driver.isolation() != tier) {
                    driver.close();
                    throw new IllegalStateException("driver " + driver.name() + " was asked for isolation " + tier.id() + " and gives "
                            + driver.isolation().id());
                }
                return driver;
            }
            available.add(provider.name());
        }
        throw AirlockException.unavailable("no installed isolation driver gives isolation " + tier.id() + " (drivers on the class path: "
                + available + ")");
    }

    static IsolationDriver open(DriverSettings settings) {
        List<String> available = new ArrayList<>();
        for (DriverProvider provider : ServiceLoader.load(DriverProvider.class, DriverProvider.class.getClassLoader())) {
            if (provider.name().equals(settings.driver())) {
                return provider.create(settings);
            }
            available.add(provider.name());
        }
        throw AirlockException.invalid("no isolation driver named '" + Printable.of(settings.driver()) + "' is installed"
                + (available.isEmpty() ? ": none is on the class path (add a driver module such as airlock-oci)"
                        : ": choose one of " + available));
    }
}
