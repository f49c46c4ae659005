package dev.airlock.server.config;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverSettings;

import java.nio.file.Path;
import java.time.Duration;

/**
 * Settings of {@code airlock serve}. Every field has an embedded default, so the server starts
 * with no configuration at all.
 *
 * @param host          interface to bind; loopback by default, since the API runs code
 * @param port          TCP port; 0 picks a free one (tests)
 * @param dataDir       the token and the state database live here
 * @param driver        which isolation driver to start, by name, and its settings (found through
 *                      {@link dev.airlock.core.DriverProvider}: the server depends on no driver module)
 * @param poolSize      warm sandboxes of the default spec kept ready
 * @param maxSandboxes  live sandboxes at once; one more is refused with 429
 * @param defaultTtl    lifetime of a sandbox created without one
 * @param maxTtl        the longest lifetime a client may ask for
 * @param defaultIdle   idle timeout of a sandbox created without one
 * @param policyFile    the policy (clients, profiles, secrets); null: the built-in policy, one
 *                      {@code local} client holding {@code <data>/token}
 * @param egressCa      a PEM file of further CA certificates the egress proxy trusts, beside the
 *                      JVM's own, when it verifies the upstream servers of credential-bound HTTPS
 *                      destinations (a private API behind an internal CA); null: the JVM's only
 */
public record ServerConfig(
        String host,
        int port,
        Path dataDir,
        DriverSettings driver,
        int poolSize,
        int maxSandboxes,
        Duration defaultTtl,
        Duration maxTtl,
        Duration defaultIdle,
        Path policyFile,
        Path egressCa) {

    /** The state database's file name in the data directory. */
    public static final String DATABASE = "airlock.db";

    public static final int DEFAULT_PORT = 7700;

    public ServerConfig {
        if (port < 0 || port > 65535) {
            throw AirlockException.invalid("port " + port + " is out of range: give 1 to 65535 (0 for any free port)");
        }
        if (maxSandboxes < 1 || maxSandboxes > 100_000) {
            throw AirlockException.invalid("max sandboxes " + maxSandboxes + " is out of range: give 1 to 100000");
        }
        if (poolSize < 0 || poolSize > 1000) {
            throw AirlockException.invalid("pool size " + poolSize + " is out of range: give 0 to 1000");
        }
    }

    /** The settings without {@code egressCa}: the egress proxy trusts the JVM's CAs only. */
    public ServerConfig(String host, int port, Path dataDir, DriverSettings driver, int poolSize, int maxSandboxes, Duration defaultTtl,
                        Duration maxTtl, Duration defaultIdle, Path policyFile) {
        this(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, null);
    }

    public static ServerConfig defaults() {
        return new ServerConfig("127.0.0.1", DEFAULT_PORT, Path.of("/var/lib/airlock"), DriverSettings.of("oci"),
                2, 200, Duration.ofMinutes(10), Duration.ofHours(24), Duration.ofMinutes(5), null, null);
    }

    public ServerConfig withPort(int p) {
        return new ServerConfig(host, p, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa);
    }

    public ServerConfig withHost(String h) {
        return new ServerConfig(h, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa);
    }

    public ServerConfig withDataDir(Path d) {
        return new ServerConfig(host, port, d, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa);
    }

    public ServerConfig withDriver(DriverSettings d) {
        return new ServerConfig(host, port, dataDir, d, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa);
    }

    public ServerConfig withPoolSize(int n) {
        return new ServerConfig(host, port, dataDir, driver, n, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa);
    }

    public ServerConfig withPolicyFile(Path f) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, f, egressCa);
    }

    public ServerConfig withMaxSandboxes(int n) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, n, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa);
    }

    /** Extra CAs (PEM) the egress proxy trusts for credential-bound upstream servers; null: the JVM's only. */
    public ServerConfig withEgressCa(Path pem) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, pem);
    }

    /** What a client without a valid token is told to send. */
    public String authHint() {
        return policyFile() == null
                ? "send 'Authorization: Bearer <token>' with the token from " + dataDir().resolve("token")
                : "send 'Authorization: Bearer <token>' with a client token of the policy " + policyFile();
    }

    /** The state database in the data directory: the audit log and the sandboxes this server made. */
    public Path database() {
        return dataDir().resolve(DATABASE);
    }
}
