package dev.airlock.server.audit;

import dev.airlock.core.AirlockException;

import java.time.Duration;
import java.util.Map;

/**
 * How much the audit log keeps, and how it folds repeated refusals.
 *
 * @param retention  records older than this are pruned (the chain keeps an anchor: docs/audit.md)
 * @param maxRecords the most records kept; past it the oldest are pruned, the same way
 * @param window     refusals an outsider can repeat at will (a request without a valid token, a
 *                   refused egress connection) are recorded once per source and window, then
 *                   counted: one more record with the count when the window closes
 */
public record AuditSettings(Duration retention, long maxRecords, Duration window) {

    public static final Duration DEFAULT_RETENTION = Duration.ofDays(90);
    /** About 1 GiB of database at ~500 bytes a record. */
    public static final long DEFAULT_MAX_RECORDS = 2_000_000;
    public static final Duration DEFAULT_WINDOW = Duration.ofMinutes(1);
    /** Fewer records than this would keep too little to investigate anything. */
    public static final long MIN_RECORDS = 1000;

    public static final AuditSettings DEFAULTS = new AuditSettings(DEFAULT_RETENTION, DEFAULT_MAX_RECORDS, DEFAULT_WINDOW);

    public AuditSettings {
        if (retention == null || retention.compareTo(Duration.ofSeconds(1)) < 0) {
            throw AirlockException.invalid("audit retention " + retention + " is too short: give at least 1 second (default 90 days)");
        }
        if (maxRecords < MIN_RECORDS) {
            throw AirlockException.invalid("audit max records " + maxRecords + " is too small: give at least " + MIN_RECORDS
                    + " (default " + DEFAULT_MAX_RECORDS + ")");
        }
        if (window == null || window.isNegative() || window.isZero() || window.compareTo(Duration.ofHours(1)) > 0) {
            throw AirlockException.invalid("audit aggregation window " + window + " is out of range: give 1 second to 1 hour");
        }
    }

    /**
     * The defaults, changed by {@code AIRLOCK_AUDIT_RETENTION_DAYS} and
     * {@code AIRLOCK_AUDIT_MAX_RECORDS} when set.
     */
    public static AuditSettings fromEnvironment(Map<String, String> env) {
        Duration retention = DEFAULT_RETENTION;
        long max = DEFAULT_MAX_RECORDS;
        String days = env.get("AIRLOCK_AUDIT_RETENTION_DAYS");
        if (days != null && !days.isBlank()) {
            retention = Duration.ofDays(number("AIRLOCK_AUDIT_RETENTION_DAYS", days, 1, 36_500));
        }
        String records = env.get("AIRLOCK_AUDIT_MAX_RECORDS");
        if (records != null && !records.isBlank()) {
            max = number("AIRLOCK_AUDIT_MAX_RECORDS", records, MIN_RECORDS, Long.MAX_VALUE);
        }
        return new AuditSettings(retention, max, DEFAULT_WINDOW);
    }

    private static long number(String name, String value, long min, long max) {
        try {
            long n = Long.parseLong(value.trim());
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw AirlockException.invalid(name + " is not a whole number from " + min + " to " + max + ": unset it for the default");
    }
}
