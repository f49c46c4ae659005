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
     * The microVM tier; {@code base}'s options carry over when it is a microvm driver. Of another
     * driver's options only the image store ({@code imageRoot}) means something here: the tier serves
     * the same stored images; the rest are then the defaults.
     */
    @Override
    public DriverSettings settingsFor(Isolation tier, DriverSettings base) {
        if (tier != Isolation.MICROVM) {
            return null;
        }
        if (NAME.equals(base.driver())) {
            return new DriverSettings(NAME, base.options(), base.protectedPaths());
        }
        String imageRoot = base.options().get("imageRoot");
        return new DriverSettings(NAME, imageRoot == null ? Map.of() : Map.of("imageRoot", imageRoot), base.protectedPaths());
    }
}
