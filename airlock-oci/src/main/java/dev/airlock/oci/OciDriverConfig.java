package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.Printable;
import dev.airlock.oci.image.ImageStore;

import java.nio.file.Path;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Settings of the OCI driver.
 *
 * @param runtime      runc (default), crun or runsc, or an absolute path to one of them: the same
 *                     bundle serves all three (runsc with the changes {@link OciRuntime} makes)
 * @param stateRoot    where bundles and the instance lock live; a tmpfs such as /run is best,
 *                     since a reboot then leaves nothing to reap
 * @param hostIdBase   where the sandboxes' host ids start: each live sandbox gets its own
 *                     range of 65536 from here on, {@link UidSlots#SLOTS} ranges in all, and none of
 *                     them may belong to a host account
 * @param startTimeout how long a sandbox may take from the runtime's start to its agent's hello
 * @param weakenings   controls deliberately left out, for {@code airlock verify --unsafe} only; empty
 *                     by default and never set from the server's configuration
 * @param protectedPaths host directories no input may be, lie in or contain, beyond the state root
 *                     and the fixed ones (/proc, /sys, /dev, /run, /var/lib/airlock): the server's
 *                     data directory, say
 * @param imageRoot    the image store ({@link dev.airlock.oci.image.ImageStore}) whose images
 *                     sandboxes may start from, beside {@code system}; only read by the driver
 */
public record OciDriverConfig(String runtime, Path stateRoot, long hostIdBase, Duration startTimeout, Set<Weakening> weakenings,
                              Set<Path> protectedPaths, Path imageRoot) {

    public OciDriverConfig(String runtime, Path stateRoot, long hostIdBase, Duration startTimeout, Set<Weakening> weakenings,
                           Set<Path> protectedPaths) {
        this(runtime, stateRoot, hostIdBase, startTimeout, weakenings, protectedPaths, null);
    }

    public OciDriverConfig(String runtime, Path stateRoot, long hostIdBase, Duration startTimeout) {
        this(runtime, stateRoot, hostIdBase, startTimeout, Set.of());
    }

    public OciDriverConfig(String runtime, Path stateRoot, long hostIdBase, Duration startTimeout, Set<Weakening> weakenings) {
        this(runtime, stateRoot, hostIdBase, startTimeout, weakenings, Set.of());
    }

    public OciDriverConfig {
        if (runtime == null || runtime.isBlank()) {
            runtime = "runc";
        }
        if (stateRoot == null) {
            stateRoot = Path.of("/run/airlock");
        }
        if (hostIdBase < 100_000 || UidSlots.end(hostIdBase) > 4_294_967_294L) {
            throw AirlockException.invalid("host id base " + hostIdBase + " is out of range: give 100000 to "
                    + (4_294_967_294L - UidSlots.end(0)) + ", above every host account");
        }
        if (startTimeout == null) {
            startTimeout = Duration.ofSeconds(20);
        }
        weakenings = weakenings == null ? Set.of() : Set.copyOf(weakenings);
        protectedPaths = protectedPaths == null ? Set.of() : Set.copyOf(protectedPaths);
        if (imageRoot == null) {
            imageRoot = Path.of(ImageStore.DEFAULT_ROOT);
        }
    }

    public static OciDriverConfig defaults() {
        return new OciDriverConfig("runc", Path.of("/run/airlock"), OciConfig.DEFAULT_HOST_ID_BASE, Duration.ofSeconds(20));
    }

    public OciDriverConfig withRuntime(String name) {
        return new OciDriverConfig(name, stateRoot, hostIdBase, startTimeout, weakenings, protectedPaths, imageRoot);
    }

    public OciDriverConfig withStateRoot(Path root) {
        return new OciDriverConfig(runtime, root, hostIdBase, startTimeout, weakenings, protectedPaths, imageRoot);
    }

    /** This configuration with controls deliberately left out: for {@code airlock verify --unsafe} only. */
    public OciDriverConfig withWeakenings(Set<Weakening> w) {
        return new OciDriverConfig(runtime, stateRoot, hostIdBase, startTimeout, w, protectedPaths, imageRoot);
    }

    /** This configuration with further host directories that no input may touch (see {@code protectedPaths}). */
    public OciDriverConfig withProtectedPaths(Set<Path> paths) {
        return new OciDriverConfig(runtime, stateRoot, hostIdBase, startTimeout, weakenings, paths, imageRoot);
    }

    /** This configuration with its images in the store at {@code root}. */
    public OciDriverConfig withImageRoot(Path root) {
        return new OciDriverConfig(runtime, stateRoot, hostIdBase, startTimeout, weakenings, protectedPaths, root);
    }

    /** The option names of {@link #toSettings()} and {@link #fromSettings}. */
    static final List<String> OPTIONS = List.of("runtime", "stateRoot", "hostIdBase", "startTimeout", "imageRoot");

    /**
     * These settings in the driver-neutral form the server holds ({@link DriverSettings}, driver
     * {@value OciDriverProvider#NAME}).
     *
     * @throws AirlockException if controls are weakened: weakenings never reach a server
     */
    public DriverSettings toSettings() {
        if (!weakenings.isEmpty()) {
            throw AirlockException.invalid("weakened settings (" + weakenings + ") are for airlock verify only and never reach a server");
        }
        Map<String, String> options = new LinkedHashMap<>();
        options.put("runtime", runtime);
        options.put("stateRoot", stateRoot.toString());
        options.put("hostIdBase", Long.toString(hostIdBase));
        options.put("startTimeout", startTimeout.toString());
        options.put("imageRoot", imageRoot.toString());
        return new DriverSettings(OciDriverProvider.NAME, options, protectedPaths);
    }

    /** Reads {@code settings} as written by {@link #toSettings()}; an option left out keeps its default. */
    public static OciDriverConfig fromSettings(DriverSettings settings) {
        for (String key : settings.options().keySet()) {
            if (!OPTIONS.contains(key)) {
                throw AirlockException.invalid("the oci driver has no option '" + Printable.of(key) + "': give one of " + OPTIONS);
            }
        }
        OciDriverConfig defaults = defaults();
        Map<String, String> o = settings.options();
        long hostIdBase = defaults.hostIdBase();
        if (o.containsKey("hostIdBase")) {
            try {
                hostIdBase = Long.parseLong(o.get("hostIdBase"));
            } catch (NumberFormatException e) {
                throw AirlockException.invalid("the oci driver's hostIdBase '" + Printable.of(o.get("hostIdBase")) + "' is not a number");
            }
        }
        Duration startTimeout = defaults.startTimeout();
        if (o.containsKey("startTimeout")) {
            try {
                startTimeout = Duration.parse(o.get("startTimeout"));
            } catch (DateTimeParseException e) {
                throw AirlockException.invalid("the oci driver's startTimeout '" + Printable.of(o.get("startTimeout"))
                        + "' is not an ISO-8601 duration: give one such as PT20S");
            }
        }
        return new OciDriverConfig(o.getOrDefault("runtime", defaults.runtime()), Path.of(o.getOrDefault("stateRoot",
                defaults.stateRoot().toString())), hostIdBase, startTimeout, Set.of(), settings.protectedPaths(),
                Path.of(o.getOrDefault("imageRoot", defaults.imageRoot().toString())));
    }
}
