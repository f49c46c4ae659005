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
 * @param e2bPort       the E2B door's TCP port ({@link #E2B_AFTER_API}: the port after the REST API's,
 *                      7701 by default, a free one when the API's is; {@link #E2B_OFF}: no E2B door)
 * @param cluster       how this server joins a cluster of nodes on PostgreSQL; null: it runs alone
 * @param tls           the certificate and key the API's port serves HTTPS with; null: plain HTTP
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
        Path egressCa,
        int e2bPort,
        ClusterSettings cluster,
        TlsFiles tls) {

    /** The state database's file name in the data directory. */
    public static final String DATABASE = "airlock.db";

    public static final int DEFAULT_PORT = 7700;
    /** The E2B door listens on the port after the REST API's (a free one when the API's is free). */
    public static final int E2B_AFTER_API = -1;
    /** No E2B door. */
    public static final int E2B_OFF = 0;

    public ServerConfig {
        if (port < 0 || port > 65535) {
            throw AirlockException.invalid("port " + port + " is out of range: give 1 to 65535 (0 for any free port)");
        }
        if (e2bPort < E2B_AFTER_API || e2bPort > 65535) {
            throw AirlockException.invalid("E2B port " + e2bPort + " is out of range: give 1 to 65535, or 0 for no E2B door");
        }
        if (e2bPort == E2B_AFTER_API && port == 65535) {
            throw AirlockException.invalid("the E2B door listens on the port after the API's, and 65535 is the last: give the E2B door"
                    + " a port of its own (--e2b-port), or 0 for none");
        }
        if (e2bPort != E2B_OFF && e2bPort == port) {
            throw AirlockException.invalid("the REST API and the E2B door cannot share port " + port + ": give each its own");
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
        this(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, null, E2B_AFTER_API, null, null);
    }

    public static ServerConfig defaults() {
        return new ServerConfig("127.0.0.1", DEFAULT_PORT, Path.of("/var/lib/airlock"), DriverSettings.of("oci"),
                2, 200, Duration.ofMinutes(10), Duration.ofHours(24), Duration.ofMinutes(5), null, null, E2B_AFTER_API, null, null);
    }

    public ServerConfig withPort(int p) {
        return new ServerConfig(host, p, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, e2bPort, cluster, tls);
    }

    public ServerConfig withHost(String h) {
        return new ServerConfig(h, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, e2bPort, cluster, tls);
    }

    public ServerConfig withDataDir(Path d) {
        return new ServerConfig(host, port, d, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, e2bPort, cluster, tls);
    }

    public ServerConfig withDriver(DriverSettings d) {
        return new ServerConfig(host, port, dataDir, d, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, e2bPort, cluster, tls);
    }

    public ServerConfig withPoolSize(int n) {
        return new ServerConfig(host, port, dataDir, driver, n, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, e2bPort, cluster, tls);
    }

    public ServerConfig withPolicyFile(Path f) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, f, egressCa, e2bPort, cluster, tls);
    }

    public ServerConfig withMaxSandboxes(int n) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, n, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, e2bPort, cluster, tls);
    }

    /** Extra CAs (PEM) the egress proxy trusts for credential-bound upstream servers; null: the JVM's only. */
    public ServerConfig withEgressCa(Path pem) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, pem, e2bPort, cluster, tls);
    }

    /** The E2B door on {@code p} ({@link #E2B_OFF}: none; {@link #E2B_AFTER_API}: the port after the API's). */
    public ServerConfig withE2bPort(int p) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, p, cluster, tls);
    }

    /** This server as a node of a cluster ({@code null}: alone). */
    public ServerConfig withCluster(ClusterSettings c) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, e2bPort, c, tls);
    }

    /** The API's port serves HTTPS with {@code t}'s certificate and key ({@code null}: plain HTTP). */
    public ServerConfig withTls(TlsFiles t) {
        return new ServerConfig(host, port, dataDir, driver, poolSize, maxSandboxes, defaultTtl, maxTtl, defaultIdle, policyFile, egressCa, e2bPort, cluster, t);
    }

    /** The PEM files of the API's TLS: the certificate chain (the server's first) and its private key. */
    public record TlsFiles(Path cert, Path key) {
        public TlsFiles {
            if (cert == null || key == null) {
                throw AirlockException.invalid("HTTPS needs both --tls-cert and --tls-key (PEM files)");
            }
        }
    }

    /** The port the E2B door binds (0: a free one), or -1 when there is no E2B door. */
    public int e2bBindPort() {
        if (e2bPort == E2B_OFF) {
            return -1;
        }
        return e2bPort != E2B_AFTER_API ? e2bPort : port == 0 ? 0 : port + 1;
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
