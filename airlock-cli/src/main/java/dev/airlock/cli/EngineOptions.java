package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverSettings;
import dev.airlock.core.Engine;
import dev.airlock.core.IsolationDriver;
import dev.airlock.core.SandboxSpec;
import dev.airlock.microvm.MicroVmDriver;
import dev.airlock.microvm.MicroVmDriverConfig;
import dev.airlock.microvm.MicroVmDriverProvider;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/**
 * Options shared by every command that starts an engine. Environment variables give defaults.
 * {@code --runtime} chooses the isolation: an OCI runtime (runc or crun: containers; runsc:
 * gVisor) for the OCI driver, or {@value MicroVmDriverProvider#NAME} for the microVM driver.
 */
final class EngineOptions {

    static final String MICROVM = MicroVmDriverProvider.NAME;

    @Option(names = "--runtime", paramLabel = "NAME",
            description = "What runs sandboxes: runc or crun (containers), airlock (containers started by Airlock's own built-in"
                    + " runtime: no runc needed; airlock doctor times each), runsc (gVisor), an absolute path to an OCI runtime,"
                    + " or microvm (a QEMU guest with its own kernel; software-emulated where KVM does not boot one, several seconds"
                    + " a start) (env AIRLOCK_RUNTIME; default runc).")
    String runtime = System.getenv().getOrDefault("AIRLOCK_RUNTIME", "runc");

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "Where sandbox state lives; microvm guests' under DIR/microvm (env AIRLOCK_STATE_DIR; default /run/airlock).")
    Path stateDir = Path.of(System.getenv().getOrDefault("AIRLOCK_STATE_DIR", "/run/airlock"));

    @Option(names = "--microvm-accelerator", paramLabel = "tcg|kvm",
            description = "How microvm guests run: tcg (software emulation: boots everywhere, slow) or kvm (hardware virtualization,"
                    + " where 'airlock doctor' says the tier works with KVM) (env AIRLOCK_MICROVM_ACCELERATOR; default tcg).")
    String microVmAccelerator;

    @Mixin
    ImageDirOption images = new ImageDirOption();

    boolean microVm() {
        return MICROVM.equals(runtime);
    }

    OciDriverConfig driverConfig() {
        return driverConfig(null);
    }

    /**
     * The OCI driver's settings, for the commands that only drive OCI runtimes; {@code dataDir}
     * (null: the default) holds the image store unless --image-dir says otherwise.
     *
     * @throws AirlockException if {@code --runtime microvm} was given
     */
    OciDriverConfig driverConfig(Path dataDir) {
        if (microVm()) {
            throw AirlockException.invalid("this command does not support --runtime microvm yet: give an OCI runtime (runc, crun or"
                    + " runsc)");
        }
        return ociConfig(runtime).withImageRoot(images.resolve(dataDir));
    }

    /** The OCI settings for host-wide checks (doctor, leaks): the runtime given, or runc when it is microvm. */
    OciDriverConfig hostCheckConfig() {
        return ociConfig(microVm() ? "runc" : runtime);
    }

    private OciDriverConfig ociConfig(String ociRuntime) {
        return OciDriverConfig.defaults().withRuntime(ociRuntime).withStateRoot(stateDir);
    }

    /** Where the microVM driver keeps its state: under the state directory. */
    Path microVmStateRoot() {
        return stateDir.resolve(MICROVM);
    }

    /** The microVM driver's settings: its state under the state directory, the image store as for the OCI driver. */
    MicroVmDriverConfig microVmConfig() {
        return microVmConfig(null);
    }

    /** The microVM driver's settings; {@code dataDir} as for {@link #driverConfig(Path)}. */
    MicroVmDriverConfig microVmConfig(Path dataDir) {
        MicroVmDriverConfig config = MicroVmDriverConfig.defaults().withStateRoot(microVmStateRoot()).withImageRoot(images.resolve(dataDir));
        return microVmAccelerator == null ? config : config.withAccelerator(microVmAccelerator);
    }

    /** The chosen driver's settings, as a server holds them; {@code dataDir} as for {@link #driverConfig(Path)}. */
    DriverSettings driverSettings(Path dataDir) {
        return microVm() ? microVmConfig(dataDir).toSettings() : driverConfig(dataDir).toSettings();
    }

    /** An engine whose sandboxes all die with this process, also on Ctrl-C or SIGTERM. */
    Engine open(int poolSize, SandboxSpec poolSpec) {
        IsolationDriver driver = microVm() ? new MicroVmDriver(microVmConfig()) : new OciDriver(driverConfig());
        Engine engine = new Engine(driver, poolSize, poolSpec);
        Runtime.getRuntime().addShutdownHook(new Thread(engine::close, "airlock-shutdown"));
        return engine;
    }
}
