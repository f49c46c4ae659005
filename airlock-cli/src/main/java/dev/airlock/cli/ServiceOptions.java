package dev.airlock.cli;

import dev.airlock.server.config.ServerConfig;
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

    @Option(names = "--policy", paramLabel = "FILE", description = "Policy file: clients, profiles, secrets, approvals (env AIRLOCK_POLICY;"
            + " default: the built-in policy, one client holding DIR/token). See docs/policy.md.")
    Path policy = System.getenv("AIRLOCK_POLICY") == null ? null : Path.of(System.getenv("AIRLOCK_POLICY"));

    @Option(names = "--egress-ca", paramLabel = "FILE", description = "PEM file of further CA certificates the egress proxy trusts, beside"
            + " the JVM's, when it verifies the servers that credentials are sent to (env AIRLOCK_EGRESS_CA; default: the JVM's CAs only).")
    Path egressCa = System.getenv("AIRLOCK_EGRESS_CA") == null ? null : Path.of(System.getenv("AIRLOCK_EGRESS_CA"));

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    ServerConfig config() {
        return ServerConfig.defaults().withDataDir(dataDir).withDriver(engineOptions.driverSettings(dataDir))
                .withPoolSize(poolSize).withMaxSandboxes(maxSandboxes).withPolicyFile(policy).withEgressCa(egressCa);
    }
}
