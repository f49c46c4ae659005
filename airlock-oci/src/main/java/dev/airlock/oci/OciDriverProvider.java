package dev.airlock.oci;

import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.Isolation;
import dev.airlock.core.IsolationDriver;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

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

    /**
     * The container tier with the container runtime {@code base} names (runc, crun or Airlock's own),
     * else runc; the gVisor tier with runsc. The state directory, host ids and start timeout of
     * {@code base} carry over when it is an OCI driver (two runtimes share them as two engines on one
     * host do).
     */
    @Override
    public DriverSettings settingsFor(Isolation tier, DriverSettings base) {
        String configured = NAME.equals(base.driver()) ? base.options().get("runtime") : null;
        String runtime = switch (tier) {
            case CONTAINER -> List.of("runc", "crun", Launcher.NAME).contains(configured) ? configured : "runc";
            case GVISOR -> "runsc";
            case MICROVM -> null;
        };
        if (runtime == null) {
            return null;
        }
        Map<String, String> options = new LinkedHashMap<>(NAME.equals(base.driver()) ? base.options() : Map.of());
        options.put("runtime", runtime);
        return new DriverSettings(NAME, options, base.protectedPaths());
    }
}
