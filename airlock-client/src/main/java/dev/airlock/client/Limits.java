package dev.airlock.client;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Resource budgets asked for when creating a sandbox. Every field is optional: {@code null} means
 * the server's default (512m memory, 256 pids, 1 cpu, 30 s per execution, 1m output, 64m file size,
 * 1024 open files, 128m disk). The server checks the ranges and names the field it refuses; this
 * record only rejects what can never be valid.
 *
 * <p>Sizes are strings such as {@code "256m"}, {@code "1g"}, {@code "512k"} or a byte count
 * ({@code "1048576"}), binary units.
 *
 * @param memory      memory limit, no swap; exceeding it OOM-kills the process
 * @param pids        processes and threads together
 * @param cpus        CPU quota in cores (1.5 = one and a half cores)
 * @param timeout     wall-clock budget of one execution
 * @param outputLimit stdout and stderr kept per execution, each
 * @param fileSize    largest file a process may write
 * @param openFiles   open file descriptors per process
 * @param disk        size of each writable tmpfs ({@code /tmp} and {@code /workspace})
 */
public record Limits(
        String memory,
        Integer pids,
        Double cpus,
        Duration timeout,
        String outputLimit,
        String fileSize,
        Integer openFiles,
        String disk) {

    /** Everything at the server's defaults; a sandbox with these comes from the warm pool. */
    public static final Limits DEFAULTS = new Limits(null, null, null, null, null, null, null, null);

    private static final Pattern SIZE = Pattern.compile("[0-9]+(\\.[0-9]+)?([kmgt](i?b)?|b)?");

    public Limits {
        memory = size("memory", memory);
        outputLimit = size("outputLimit", outputLimit);
        fileSize = size("fileSize", fileSize);
        disk = size("disk", disk);
        if (pids != null && pids <= 0) {
            throw new IllegalArgumentException("pids " + pids + " must be positive");
        }
        if (cpus != null && !(cpus > 0 && Double.isFinite(cpus))) {
            throw new IllegalArgumentException("cpus " + cpus + " must be a positive number of cores, such as 0.5 or 2");
        }
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("timeout " + timeout + " must be positive");
        }
        if (openFiles != null && openFiles <= 0) {
            throw new IllegalArgumentException("openFiles " + openFiles + " must be positive");
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these limits. */
    public Builder toBuilder() {
        return new Builder().memory(memory).pids(pids).cpus(cpus).timeout(timeout)
                .outputLimit(outputLimit).fileSize(fileSize).openFiles(openFiles).disk(disk);
    }

    static String size(String field, String value) {
        if (value == null) {
            return null;
        }
        String v = value.trim().toLowerCase(Locale.ROOT);
        if (!SIZE.matcher(v).matches()) {
            throw new IllegalArgumentException(field + " '" + Errors.sanitize(value, 40)
                    + "' is not a size: give a byte count or a number with k, m or g, such as 256m or 1g");
        }
        return v;
    }

    /** Collects limits; unset ones stay at the server's default. */
    public static final class Builder {
        private String memory;
        private Integer pids;
        private Double cpus;
        private Duration timeout;
        private String outputLimit;
        private String fileSize;
        private Integer openFiles;
        private String disk;

        Builder() {
        }

        public Builder memory(String size) { this.memory = size; return this; }
        public Builder memoryBytes(long bytes) { this.memory = Long.toString(bytes); return this; }
        public Builder pids(Integer pids) { this.pids = pids; return this; }
        public Builder cpus(Double cpus) { this.cpus = cpus; return this; }
        public Builder timeout(Duration timeout) { this.timeout = timeout; return this; }
        public Builder outputLimit(String size) { this.outputLimit = size; return this; }
        public Builder fileSize(String size) { this.fileSize = size; return this; }
        public Builder openFiles(Integer openFiles) { this.openFiles = openFiles; return this; }
        public Builder disk(String size) { this.disk = size; return this; }

        public Limits build() {
            return new Limits(memory, pids, cpus, timeout, outputLimit, fileSize, openFiles, disk);
        }
    }
}
