package dev.airlock.server.config;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * How a server joins a cluster (docs/cluster.md): the PostgreSQL database every node shares, this
 * node's name, the file of the secret every node is given, and how long a node may stay silent
 * before the others count it down.
 *
 * @param url        a JDBC URL of PostgreSQL ({@code postgresql://} or {@code jdbc:postgresql://}), credentials in it
 * @param nodeName   1 to 63 of a-z, 0-9 and '-', unique in the cluster
 * @param secretFile a file of at least {@value #MIN_SECRET_BYTES} bytes that only its owner may read
 * @param lease      a node whose last heartbeat is older than this is down
 * @param peerPort   the port other nodes call this one on, over TLS (0: any free one), on the API's host
 * @param lostKept   how long the catalog keeps the sandboxes of a node that is down (listed {@code lost}, answered 410)
 *                   before the node that runs the cluster's duties removes them
 */
public record ClusterSettings(String url, String nodeName, Path secretFile, Duration lease, int peerPort, Duration lostKept) {

    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(15);
    public static final Duration DEFAULT_LOST_KEPT = Duration.ofHours(1);
    /** The port other nodes call this one on (TLS), unless {@code --cluster-port} gives another (7700 is the API's, 7701 the E2B door's). */
    public static final int DEFAULT_PEER_PORT = 7702;
    public static final int MIN_SECRET_BYTES = 32;
    private static final Pattern NODE_NAME = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");

    public ClusterSettings {
        if (url == null || url.isBlank()) {
            throw AirlockException.invalid("a cluster needs the URL of its PostgreSQL database: --cluster postgresql://HOST:PORT/DB?user=U&password=P");
        }
        url = jdbcUrl(url);
        if (nodeName == null || !NODE_NAME.matcher(nodeName).matches()) {
            throw AirlockException.invalid("node name '" + Printable.of(nodeName) + "' is not valid: give 1 to 63 of a-z, 0-9 and '-'"
                    + " (not at either end), unique in the cluster (--node-name)");
        }
        if (secretFile == null) {
            throw AirlockException.invalid("a cluster node needs the cluster's secret: --cluster-secret FILE, the same file on every node");
        }
        if (lease == null || lease.compareTo(Duration.ofSeconds(1)) < 0 || lease.compareTo(Duration.ofMinutes(10)) > 0) {
            throw AirlockException.invalid("a node's lease must be 1 s to 10 min, not " + lease);
        }
        if (peerPort < 0 || peerPort > 65535) {
            throw AirlockException.invalid("the cluster's peer port must be 0 to 65535 (--cluster-port), not " + peerPort);
        }
        if (lostKept == null || lostKept.isNegative() || lostKept.compareTo(Duration.ofDays(365)) > 0) {
            throw AirlockException.invalid("how long lost sandboxes stay listed must be 0 s to 365 days (--cluster-lost-kept), not " + lostKept);
        }
    }

    /** A node's settings with lost sandboxes kept {@link #DEFAULT_LOST_KEPT}. */
    public ClusterSettings(String url, String nodeName, Path secretFile, Duration lease, int peerPort) {
        this(url, nodeName, secretFile, lease, peerPort, DEFAULT_LOST_KEPT);
    }

    /** {@code url} as JDBC takes it ({@code jdbc:postgresql://...}); refused when it is not PostgreSQL's. */
    public static String jdbcUrl(String url) {
        String jdbc = url.startsWith("jdbc:") ? url : "jdbc:" + url;
        if (!jdbc.startsWith("jdbc:postgresql://")) {
            throw AirlockException.invalid("the cluster's database URL must be a PostgreSQL one, postgresql://HOST:PORT/DB, not '"
                    + Printable.of(withoutCredentials(jdbc)) + "'");
        }
        return jdbc;
    }

    /** The URL as it may be shown: as {@code --cluster} takes it, without its query (a password) or a user in it. */
    public String shownUrl() {
        return withoutCredentials(url).substring("jdbc:".length());
    }

    public static String withoutCredentials(String url) {
        int query = url.indexOf('?');
        String base = query < 0 ? url : url.substring(0, query);
        int at = base.indexOf('@');
        int scheme = base.indexOf("//");
        return at > scheme && scheme >= 0 ? base.substring(0, scheme + 2) + base.substring(at + 1) : base;
    }

    /**
     * The secret, read from its file: refused when the file is missing, shorter than {@value
     * #MIN_SECRET_BYTES} bytes, a link, or readable by anyone but its owner.
     */
    public byte[] readSecret() {
        try {
            if (!Files.isRegularFile(secretFile, LinkOption.NOFOLLOW_LINKS)) {
                throw AirlockException.invalid("the cluster secret " + secretFile + " is not a file: make one with"
                        + " 'head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE' and give every node the same");
            }
            Set<PosixFilePermission> perms = Files.getPosixFilePermissions(secretFile, LinkOption.NOFOLLOW_LINKS);
            if (perms.stream().anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
                throw AirlockException.invalid("the cluster secret " + secretFile + " may be read by others than its owner: chmod 600 " + secretFile);
            }
            byte[] secret = Files.readAllBytes(secretFile);
            String text = new String(secret, java.nio.charset.StandardCharsets.UTF_8).strip();
            if (text.length() < MIN_SECRET_BYTES) {
                throw AirlockException.invalid("the cluster secret in " + secretFile + " is " + text.length() + " characters: give at least "
                        + MIN_SECRET_BYTES + " (head -c 32 /dev/urandom | base64)");
            }
            return text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw AirlockException.invalid("cannot read the cluster secret " + secretFile + ": " + e.getMessage());
        }
    }
}
