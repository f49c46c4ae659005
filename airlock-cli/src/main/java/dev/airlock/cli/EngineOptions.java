package dev.airlock.cli;

import dev.airlock.core.Engine;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/** Options shared by every command that starts an engine. Environment variables give defaults. */
final class EngineOptions {

    @Option(names = "--runtime", paramLabel = "NAME",
            description = "OCI runtime: runc, crun or runsc, or an absolute path to one (env AIRLOCK_RUNTIME; default runc).")
    String runtime = System.getenv().getOrDefault("AIRLOCK_RUNTIME", "runc");

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "Where sandbox bundles live (env AIRLOCK_STATE_DIR; default /run/airlock).")
    Path stateDir = Path.of(System.getenv().getOrDefault("AIRLOCK_STATE_DIR", "/run/airlock"));

    @Mixin
    ImageDirOption images = new ImageDirOption();

    OciDriverConfig driverConfig() {
        return driverConfig(null);
    }

    /** The driver's settings; {@code dataDir} (null: the default) holds the image store unless --image-dir says otherwise. */
    OciDriverConfig driverConfig(Path dataDir) {
        return OciDriverConfig.defaults().withRuntime(runtime).withStateRoot(stateDir).withImageRoot(images.resolve(dataDir));
    }

    /** An engine whose sandboxes all die with this process, also on Ctrl-C or SIGTERM. */
    Engine open(int poolSize, SandboxSpec poolSpec) {
        Engine engine = new Engine(new OciDriver(driverConfig()), poolSize, poolSpec);
        Runtime.getRuntime().addShutdownHook(new Thread(engine::close, "airlock-shutdown"));
        return engine;
    }
}
