package dev.airlock.server.wire;

import dev.airlock.core.Limits;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/**
 * The limits a client or a profile may set, by the name every wire format uses (REST JSON, MCP
 * arguments, policy YAML): the one place a name is mapped to its field of {@link Limits}. Each
 * door only reads the value in its own format, as the field's {@link Kind} says.
 */
public enum LimitField {
    MEMORY("memory", Kind.SIZE),
    PIDS("pids", Kind.COUNT),
    CPUS("cpus", Kind.DECIMAL),
    TIMEOUT("timeoutSeconds", Kind.SECONDS),
    OUTPUT("outputLimit", Kind.SIZE),
    FILE_SIZE("fileSize", Kind.SIZE),
    OPEN_FILES("openFiles", Kind.COUNT),
    DISK("disk", Kind.SIZE);

    /** How a value is written: a size ({@code "256m"} or bytes), a whole count, a decimal, or seconds. */
    public enum Kind { SIZE, COUNT, DECIMAL, SECONDS }

    private final String wireName;
    private final Kind kind;

    LimitField(String wireName, Kind kind) {
        this.wireName = wireName;
        this.kind = kind;
    }

    public String wireName() {
        return wireName;
    }

    public Kind kind() {
        return kind;
    }

    /** The field a wire name stands for; empty for a name no limit has. */
    public static Optional<LimitField> named(String wireName) {
        return Arrays.stream(values()).filter(f -> f.wireName.equals(wireName)).findFirst();
    }

    /** Every wire name, in declaration order. */
    public static List<String> wireNames() {
        return Arrays.stream(values()).map(LimitField::wireName).toList();
    }

    /** {@code limits} with this field set to {@code value}; {@link Limits} checks the range. */
    Limits applyTo(Limits limits, Number value) {
        return switch (this) {
            case MEMORY -> limits.withMemoryBytes(value.longValue());
            case PIDS -> limits.withPids(value.intValue());
            case CPUS -> limits.withCpus(value.doubleValue());
            case TIMEOUT -> limits.withTimeout(Duration.ofMillis(Math.round(value.doubleValue() * 1000)));
            case OUTPUT -> limits.withOutputBytes(value.longValue());
            case FILE_SIZE -> limits.withFileSizeBytes(value.longValue());
            case OPEN_FILES -> limits.withOpenFiles(value.intValue());
            case DISK -> limits.withDiskBytes(value.longValue());
        };
    }
}
