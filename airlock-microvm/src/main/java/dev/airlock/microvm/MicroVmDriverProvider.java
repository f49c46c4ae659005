package dev.airlock.microvm;

import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;

import java.util.Map;

/** The microVM driver by name, {@value #NAME}, for servers that choose their driver at wiring time. */
public final class MicroVmDriverProvider implements DriverProvider {

    public static final String NAME = "microvm";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public IsolationDriver create(DriverSettings settings) {
        return new MicroVmDriver(MicroVmDriverConfig.fromSettings(settings));
    }

    /**
     * The microVM tier; {@code base}'s options carry over when it is a microvm driver (another
     * driver's options mean nothing here, so then the defaults).
     */
    @Override
    public DriverSettings settingsFor(Isolation tier, DriverSettings base) {
        if (tier != Isolation.MICROVM) {
            return null;
        }
        return new DriverSettings(NAME, NAME.equals(base.driver()) ? base.options() : Map.of(), base.protectedPaths());
    }
}
