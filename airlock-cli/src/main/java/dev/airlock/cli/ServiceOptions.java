package dev.airlock.cli;

import dev.airlock.server.ServerConfig;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/** What {@code serve} and {@code mcp} share: where state lives and how many sandboxes to hold. */
final class ServiceOptions {

    @Option(names = "--data-dir", paramLabel = "DIR", description = "Token and state database (env AIRLOCK_DATA_DIR; default /var/lib/airlock).")
    Path dataDir = Path.of(System.getenv().getOrDefault("AIRLOCK_DATA_DIR", "/var/lib/airlock"));

    @Option(names = "--pool-size", paramLabel = "N", description = "Warm sandboxes kept ready (default 2).")
    int poolSize = 2;

    @Option(names = "--max-sandboxes", paramLabel = "N", description = "Live sandboxes at once (default 200).")
    int maxSandboxes = 200;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    ServerConfig config() {
        return ServerConfig.defaults().withDataDir(dataDir).withDriver(engineOptions.driverConfig())
                .withPoolSize(poolSize).withMaxSandboxes(maxSandboxes);
    }
}
