package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ClusterSettings;
import dev.airlock.server.config.ServerConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code airlock serve}: the main job. Runs until SIGINT or SIGTERM, then destroys every sandbox. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Serve the REST API on localhost; sandboxes live until destroyed, expired or the server stops.")
final class ServeCommand implements Callable<Integer> {

    @Option(names = "--host", paramLabel = "ADDR", description = "Address to bind (env AIRLOCK_HOST; default 127.0.0.1).")
    String host = System.getenv().getOrDefault("AIRLOCK_HOST", "127.0.0.1");

    // Defaults from the environment through picocli's ${env:...}: a value that is not a number is refused like a bad option's
    @Option(names = "--port", paramLabel = "PORT", defaultValue = "${env:AIRLOCK_PORT:-" + ServerConfig.DEFAULT_PORT + "}",
            description = "TCP port (env AIRLOCK_PORT; default 7700; 0 = any free port).")
    int port;

    @Option(names = "--e2b-port", paramLabel = "PORT", defaultValue = "${env:AIRLOCK_E2B_PORT}", description = "TCP port of the E2B-compatible door, for E2B's SDKs"
            + " (env AIRLOCK_E2B_PORT; default: the port after --port, 7701; any free port when --port is 0; 0 = no E2B door).")
    Integer e2bPort;

    @Option(names = "--tls-cert", paramLabel = "FILE", defaultValue = "${env:AIRLOCK_TLS_CERT}", description = "Serve the API and"
            + " the console over HTTPS with this certificate chain (PEM, the server's first); its names are the names the server"
            + " answers to (env AIRLOCK_TLS_CERT; default: plain HTTP).")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "FILE", defaultValue = "${env:AIRLOCK_TLS_KEY}", description = "The private key of"
            + " --tls-cert (PEM, unencrypted; env AIRLOCK_TLS_KEY).")
    Path tlsKey;

    @Option(names = "--cluster", paramLabel = "URL", description = "Join a cluster of nodes on this PostgreSQL database,"
            + " postgresql://HOST:PORT/DB?user=U&password=P (env AIRLOCK_CLUSTER_URL; default: none, this server runs alone;"
            + " docs/cluster.md).")
    String cluster = System.getenv("AIRLOCK_CLUSTER_URL");

    @Option(names = "--node-name", paramLabel = "NAME", description = "This node's name in the cluster, unique: a-z, 0-9, '-'"
            + " (env AIRLOCK_NODE_NAME; default: the host's name).")
    String nodeName = System.getenv("AIRLOCK_NODE_NAME");

    @Option(names = "--cluster-secret", paramLabel = "FILE", description = "The cluster's secret, the same file on every node,"
            + " readable by its owner only (env AIRLOCK_CLUSTER_SECRET_FILE).")
    Path clusterSecret = System.getenv("AIRLOCK_CLUSTER_SECRET_FILE") == null ? null : Path.of(System.getenv("AIRLOCK_CLUSTER_SECRET_FILE"));

    @Option(names = "--cluster-lease", paramLabel = "SECONDS", defaultValue = "${env:AIRLOCK_CLUSTER_LEASE:-15}",
            description = "How long a node may be silent before the others count it down; it sends a heartbeat every third of it"
            + " (env AIRLOCK_CLUSTER_LEASE; default 15).")
    int clusterLease;

    @Option(names = "--cluster-lost-kept", paramLabel = "SECONDS", defaultValue = "${env:AIRLOCK_CLUSTER_LOST_KEPT:-3600}",
            description = "How long the sandboxes of a node that is down stay listed as lost (answered 410) before the node that runs the"
            + " cluster's duties removes them from its catalog (env AIRLOCK_CLUSTER_LOST_KEPT; default 3600).")
    long clusterLostKept;

    @Option(names = "--cluster-port", paramLabel = "PORT", defaultValue = "${env:AIRLOCK_CLUSTER_PORT}", description = "TCP port, on --host, that the cluster's other nodes call"
            + " this one on, over TLS (env AIRLOCK_CLUSTER_PORT; default 7702; any free port when --port is 0).")
    Integer clusterPort;

    @Mixin
    ServiceOptions service = new ServiceOptions();

    @Override
    public Integer call() throws Exception {
        ServerConfig config = service.config().withHost(host).withPort(port)
                .withE2bPort(e2bPort == null ? ServerConfig.E2B_AFTER_API : e2bPort)
                .withCluster(clusterSettings())
                .withTls(tlsCert == null && tlsKey == null ? null : new ServerConfig.TlsFiles(tlsCert, tlsKey));
        AirlockServer server = AirlockServer.start(config);
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "airlock-shutdown"));
        server.reapedAtStart().forEach(line -> System.err.println("airlock: reaped " + line));
        System.out.println("airlock: serving on " + server.uri() + (config.policyFile() == null
                ? " (token in " + config.dataDir().resolve("token") + ")"
                : " (policy " + config.policyFile() + ")"));
        if (config.cluster() != null) {
            System.out.println("airlock: node '" + config.cluster().nodeName() + "' of the cluster on " + config.cluster().shownUrl());
        }
        if (server.e2bUri() != null) {
            System.out.println("airlock: E2B's SDKs: E2B_API_URL=" + server.e2bUri() + " (airlock e2b env prints what to export)");
        }
        System.out.flush();
        server.join();
        return 0;
    }

    /** A node's name when --node-name gives none: this host's, in lower case. */
    static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName().toLowerCase(java.util.Locale.ROOT);
        } catch (java.net.UnknownHostException e) {
            throw AirlockException.invalid("this host's name cannot be found (" + e.getMessage() + "): name the node with --node-name");
        }
    }

    /** The cluster this server joins, or null; the node's name defaults to the host's. */
    private ClusterSettings clusterSettings() {
        if (cluster == null || cluster.isBlank()) {
            if (nodeName != null || clusterSecret != null || clusterPort != null) {
                throw AirlockException.invalid("--node-name, --cluster-secret and --cluster-port belong to a node of a cluster: give --cluster too");
            }
            return null;
        }
        String name = nodeName != null ? nodeName : hostName();
        int peerPort = clusterPort != null ? clusterPort : port == 0 ? 0 : ClusterSettings.DEFAULT_PEER_PORT;
        return new ClusterSettings(cluster, name, clusterSecret, java.time.Duration.ofSeconds(clusterLease), peerPort,
                java.time.Duration.ofSeconds(clusterLostKept));
    }
}
