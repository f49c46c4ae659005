package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.EngineInstance;
import dev.airlock.core.Printable;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Settings of the microVM driver.
 *
 * @param stateRoot    where each instance keeps its lock, initramfs and one directory per guest
 *                     (the agent's and the console's sockets); a tmpfs such as /run is best, since a
 *                     reboot then leaves nothing to reap
 * @param cacheDir     where the guest kernel prepared from Debian's package is kept between runs
 *                     ({@code guest-kernel.sh}): about 70 MB, downloaded once
 * @param startTimeout how long a guest may take from QEMU's start to its agent's hello; under
 *                     software emulation (TCG) a boot takes several seconds, more on a busy host
 * @param accelerator  {@value #TCG} (software emulation, the default: it boots everywhere) or
 *                     {@value #KVM} (hardware virtualization, where {@code airlock doctor} shows
 *                     that {@code /dev/kvm} boots a guest: some paravirtual KVMs hang the guest);
 *                     null: the environment's {@value #ACCELERATOR_ENV}, else {@value #TCG}, so that
 *                     every engine of a host (a server's tiers, {@code run}, {@code bench}) uses it
 * @param protectedPaths host directories no input may be, lie in or contain, beyond the state root
 *                     (the server's data directory): as for the OCI driver ({@link dev.airlock.core.HostInputs})
 * @param imageRoot    the image store ({@link dev.airlock.oci.image.ImageStore}) whose images, beside
 *                     {@code system}, guests may start from, each as a read-only disk ({@link GuestDisks});
 *                     the OCI driver's default when null
 */
public record MicroVmDriverConfig(Path stateRoot, Path cacheDir, Duration startTimeout, String accelerator, Set<Path> protectedPaths,
                                  Path imageRoot) {

    public static final String TCG = "tcg";
    public static final String KVM = "kvm";
    /** The environment variable that sets the default accelerator. */
    public static final String ACCELERATOR_ENV = "AIRLOCK_MICROVM_ACCELERATOR";

    /** A unix socket's path holds at most this many bytes (sun_path, less its terminating NUL). */
    private static final int UNIX_SOCKET_PATH_MAX = 107;
    /** The longest path of a socket below the state root: a guest's agent socket, its id at full length. */
    static final int SOCKET_BELOW_ROOT = ("/engines/" + "i".repeat(EngineInstance.NAME_LENGTH) + "/sandboxes/al-"
            + "i".repeat(16) + "-" + "0".repeat(16) + "/" + MicroVmDriver.VMM_DIR + "/" + MicroVmDriver.SOCKET_NAME).length();

    public MicroVmDriverConfig {
        if (stateRoot == null) {
            stateRoot = Path.of("/run/airlock/microvm");
        }
        if (cacheDir == null) {
            cacheDir = Path.of("/var/cache/airlock/microvm");
        }
        if (startTimeout == null) {
            startTimeout = Duration.ofSeconds(60);
        }
        if (accelerator == null) {
            accelerator = System.getenv().getOrDefault(ACCELERATOR_ENV, TCG);
        }
        protectedPaths = protectedPaths == null ? Set.of() : Set.copyOf(protectedPaths);
        if (imageRoot == null) {
            imageRoot = Path.of(dev.airlock.oci.image.ImageStore.DEFAULT_ROOT);
        }
        if (!accelerator.equals(TCG) && !accelerator.equals(KVM)) {
            throw AirlockException.invalid("the microvm driver's accelerator '" + Printable.of(accelerator) + "' is unknown: give "
                    + TCG + " (software emulation) or " + KVM);
        }
        int rootBytes = stateRoot.toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8).length;
        if (rootBytes + SOCKET_BELOW_ROOT > UNIX_SOCKET_PATH_MAX) {
            throw AirlockException.invalid("the microvm driver's stateRoot " + stateRoot + " is " + rootBytes + " bytes long and each"
                    + " guest's agent socket lies " + SOCKET_BELOW_ROOT + " bytes below it, past the kernel's limit of "
                    + UNIX_SOCKET_PATH_MAX + ": choose one of at most " + (UNIX_SOCKET_PATH_MAX - SOCKET_BELOW_ROOT) + " bytes");
        }
        if (startTimeout.isNegative() || startTimeout.isZero()) {
            throw AirlockException.invalid("the microvm driver's startTimeout " + startTimeout + " is not positive: give one such as PT60S");
        }
    }

    public static MicroVmDriverConfig defaults() {
        return new MicroVmDriverConfig(null, null, null, null, null, null);
    }

    /**
     * How many times longer code takes in a guest of this accelerator than in a container: 5 under
     * software emulation (TCG), where python takes seconds to start on a busy two-core host; 1 under
     * KVM. Checks whose timeouts are about a kill, not about speed (the driver contract's, {@code
     * airlock verify}'s), multiply their timeouts by it.
     */
    public int timeScale() {
        return KVM.equals(accelerator) ? 1 : 5;
    }

    public MicroVmDriverConfig withStateRoot(Path root) {
        return new MicroVmDriverConfig(root, cacheDir, startTimeout, accelerator, protectedPaths, imageRoot);
    }

    public MicroVmDriverConfig withStartTimeout(Duration timeout) {
        return new MicroVmDriverConfig(stateRoot, cacheDir, timeout, accelerator, protectedPaths, imageRoot);
    }

    public MicroVmDriverConfig withAccelerator(String accel) {
        return new MicroVmDriverConfig(stateRoot, cacheDir, startTimeout, accel, protectedPaths, imageRoot);
    }

    public MicroVmDriverConfig withImageRoot(Path root) {
        return new MicroVmDriverConfig(stateRoot, cacheDir, startTimeout, accelerator, protectedPaths, root);
    }

    /** The option names of {@link #toSettings()} and {@link #fromSettings}. */
    static final List<String> OPTIONS = List.of("stateRoot", "cacheDir", "startTimeout", "accelerator", "imageRoot");

    /** These settings in the driver-neutral form the server holds (driver {@value MicroVmDriverProvider#NAME}). */
    public DriverSettings toSettings() {
        Map<String, String> options = new LinkedHashMap<>();
        options.put("stateRoot", stateRoot.toString());
        options.put("cacheDir", cacheDir.toString());
        options.put("startTimeout", startTimeout.toString());
        options.put("accelerator", accelerator);
        options.put("imageRoot", imageRoot.toString());
        return new DriverSettings(MicroVmDriverProvider.NAME, options, protectedPaths);
    }

    /** Reads {@code settings} as written by {@link #toSettings()}; an option left out keeps its default. */
    public static MicroVmDriverConfig fromSettings(DriverSettings settings) {
        Map<String, String> o = settings.options();
        for (String key : o.keySet()) {
            if (!OPTIONS.contains(key)) {
                throw AirlockException.invalid("the microvm driver has no option '" + Printable.of(key) + "': give one of " + OPTIONS);
            }
        }
        Duration startTimeout = null;
        if (o.containsKey("startTimeout")) {
            try {
                startTimeout = Duration.parse(o.get("startTimeout"));
            } catch (DateTimeParseException e) {
                throw AirlockException.invalid("the microvm driver's startTimeout '" + Printable.of(o.get("startTimeout"))
                        + "' is not an ISO-8601 duration: give one such as PT60S");
            }
        }
        return new MicroVmDriverConfig(o.containsKey("stateRoot") ? Path.of(o.get("stateRoot")) : null,
                o.containsKey("cacheDir") ? Path.of(o.get("cacheDir")) : null, startTimeout, o.get("accelerator"), settings.protectedPaths(),
                o.containsKey("imageRoot") ? Path.of(o.get("imageRoot")) : null);
    }
}
