package dev.airlock.microvm;

import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.IsolationDriver;

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
}
