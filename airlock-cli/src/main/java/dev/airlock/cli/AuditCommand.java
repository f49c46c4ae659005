package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.audit.AuditRecord;
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

        @Override
        public Integer call() {
            try (AuditReader reader = AuditReader.open(dataDir.resolve(ServerConfig.DATABASE))) {
                AuditReader.Verdict v = reader.verify();
                if (v.ok()) {
                    System.out.println("audit log intact: " + v.records() + " records, chain verified from seq " + v.fromSeq()
                            + (v.pruned() > 0 ? " (the anchor of " + v.pruned() + " pruned records: docs/audit.md#retention-and-the-cap)" : ""));
                    return 0;
                }
                System.out.println("audit log BROKEN at seq " + v.brokenSeq() + ": " + v.problem());
                System.out.println(v.records() + " records before it verified");
                return 1;
            }
        }
    }
}
