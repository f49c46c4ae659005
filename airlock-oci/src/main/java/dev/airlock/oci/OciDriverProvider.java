package dev.airlock.oci;

import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.IsolationDriver;

/** The OCI driver by name, {@value #NAME}, for servers that choose their driver at wiring time. */
public final class OciDriverProvider implements DriverProvider {

    public static final String NAME = "oci";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public IsolationDriver create(DriverSettings settings) {
        return new OciDriver(OciDriverConfig.fromSettings(settings));
    }
}
