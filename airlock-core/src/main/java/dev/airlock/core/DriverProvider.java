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
     * Starts the driver that {@code settings} names, found among the providers on the class path.
     *
     * @throws AirlockException if no provider has that name; the message lists those there are
     */
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
