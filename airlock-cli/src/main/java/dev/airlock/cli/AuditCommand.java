package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.cluster.ClusterMembership;
import dev.airlock.server.config.ServerConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code airlock audit}: prints the audit log of a data directory (JSON lines with {@code --json},
 * the export format); {@code airlock audit verify} recomputes its hash chain. Both read the
 * database while a server writes it.
 */
@Command(name = "audit", mixinStandardHelpOptions = true,
        description = "Print the audit log (docs/audit.md). 'audit verify' checks its hash chain.",
        subcommands = AuditCommand.Verify.class)
final class AuditCommand implements Callable<Integer> {

    @Option(names = "--data-dir", paramLabel = "DIR", description = "The server's data directory (env AIRLOCK_DATA_DIR; default /var/lib/airlock).")
    Path dataDir = defaultDataDir();

    @Option(names = "--sandbox", paramLabel = "ID", description = "Only records of this sandbox.")
    String sandbox;

    @Option(names = "--kind", paramLabel = "K", description = "Only records of this kind: request, authorization, execution, result, lifecycle, file, egress.")
    String kind;

    @Option(names = "--since", paramLabel = "ISO", description = "Only records at or after this time: 2026-11-29T23:00:00Z, or a date (UTC midnight).")
    String since;

    @Option(names = "--limit", paramLabel = "N", description = "Only the newest N matching records (still printed oldest first).")
    int limit;

    @Option(names = "--json", description = "One JSON object per line: the export format.")
    boolean json;

    static Path defaultDataDir() {
        return Path.of(System.getenv().getOrDefault("AIRLOCK_DATA_DIR", "/var/lib/airlock"));
    }

    @Override
    public Integer call() {
        if (kind != null && !AuditRecord.KINDS.contains(kind)) {
            throw AirlockException.invalid("--kind " + kind + " is not a record kind: " + String.join(", ", AuditRecord.KINDS));
        }
        if (limit < 0) {
            throw AirlockException.invalid("--limit must be 0 (all) or more");
        }
        try (AuditReader reader = AuditReader.open(dataDir.resolve(ServerConfig.DATABASE))) {
            List<AuditRecord> records = reader.query(new AuditReader.Query(sandbox, kind, parseSince(since), limit));
            for (AuditRecord r : records) {
                System.out.println(json ? r.toJsonLine()
                        : r.seq() + "  " + r.time() + "  " + r.kind() + "  " + r.actor() + "  " + (r.sandbox() == null ? "-" : r.sandbox())
                          + "  " + r.detail());
            }
        }
        return 0;
    }

    static Instant parseSince(String text) {
        if (text == null) {
            return null;
        }
        try {
            return OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeParseException e) {
            try {
                return LocalDate.parse(text).atStartOfDay(ZoneOffset.UTC).toInstant();
            } catch (DateTimeParseException e2) {
                throw AirlockException.invalid("--since '" + text + "' is not an ISO time such as 2026-11-29T23:00:00Z or a date such as 2026-11-29");
            }
        }
    }

    /** {@code airlock audit verify}: exit 0 when the chain is whole, 1 naming the first broken record. */
    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Recompute the audit log's hash chain; exit 1 naming the first record that does not fit.")
    static final class Verify implements Callable<Integer> {

        @Option(names = "--data-dir", paramLabel = "DIR", description = "The server's data directory (env AIRLOCK_DATA_DIR; default /var/lib/airlock).")
        Path dataDir = defaultDataDir();

        @Option(names = "--cluster", paramLabel = "URL", description = "Also check the log against the heads its node published in this"
                + " cluster's PostgreSQL database, as serve --cluster takes it (env AIRLOCK_CLUSTER_URL; docs/cluster.md#audit-anchors).")
        String cluster = System.getenv("AIRLOCK_CLUSTER_URL");

        @Option(names = "--node-name", paramLabel = "NAME", description = "The node whose log this is, with --cluster (env AIRLOCK_NODE_NAME;"
                + " default this host's name, as serve's).")
        String nodeName = System.getenv("AIRLOCK_NODE_NAME");

        @Override
        public Integer call() {
            if (cluster == null || cluster.isBlank()) {
                if (nodeName != null && !nodeName.equals(System.getenv("AIRLOCK_NODE_NAME"))) {
                    throw AirlockException.invalid("--node-name names the node whose anchors to check the log against: give --cluster too");
                }
            }
            try (AuditReader reader = AuditReader.open(dataDir.resolve(ServerConfig.DATABASE))) {
                AuditReader.Verdict v = reader.verify();
                if (!v.ok()) {
                    System.out.println("audit log BROKEN at seq " + v.brokenSeq() + ": " + v.problem());
                    System.out.println(v.records() + " records before it verified");
                    return 1;
                }
                String intact = "audit log intact: " + v.records() + " records, chain verified from seq " + v.fromSeq()
                        + (v.pruned() > 0 ? " (the anchor of " + v.pruned() + " pruned records: docs/audit.md#retention-and-the-cap)" : "");
                if (cluster == null || cluster.isBlank()) {
                    System.out.println(intact);
                    return 0;
                }
                String node = nodeName != null ? nodeName : ServeCommand.hostName();
                List<AuditReader.ClusterAnchor> anchors = ClusterMembership.anchors(cluster, node);
                if (anchors.isEmpty()) {
                    throw AirlockException.invalid("the cluster's database holds no audit anchors of node '" + node + "': give the node's"
                            + " name (--node-name; a node publishes its log's head every lease once it has records)");
                }
                AuditReader.AnchorVerdict a = reader.checkAnchors(anchors);
                if (!a.ok()) {
                    System.out.println("audit log BROKEN at seq " + a.brokenSeq() + " against the cluster's anchors of node '" + node + "': "
                            + a.problem());
                    System.out.println("its own chain verifies (" + v.records() + " records); " + a.matched() + " anchors before it matched");
                    return 1;
                }
                AuditReader.ClusterAnchor newest = anchors.getLast();
                System.out.println(intact + "; it matches the " + a.matched() + " anchors node '" + node + "' published in the cluster"
                        + " (the newest: seq " + newest.seq() + " at " + newest.time() + ")"
                        + (a.beforeKept() > 0 ? "; " + a.beforeKept() + " older anchors name records pruned since" : ""));
                return 0;
            }
        }
    }
}
