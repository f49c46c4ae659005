package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;
import dev.airlock.server.wire.LimitChanges;
import dev.airlock.server.wire.LimitField;
import picocli.CommandLine.Option;


/** Per-run resource limits; each left out keeps its default. */
final class LimitOptions {

    @Option(names = "--timeout", paramLabel = "SECONDS", description = "Wall-clock limit (default 30).")
    Double timeoutSeconds;

    @Option(names = "--memory", paramLabel = "SIZE", description = "Memory limit, e.g. 256m or 1g (default 512m).")
    String memory;

    @Option(names = "--cpus", paramLabel = "N", description = "CPU cores, e.g. 0.5 (default 1).")
    Double cpus;

    @Option(names = "--pids", paramLabel = "N", description = "Processes and threads (default 256).")
    Integer pids;

    @Option(names = "--output-limit", paramLabel = "SIZE", description = "Bytes kept of stdout and of stderr (default 1m).")
    String outputLimit;

    @Option(names = "--file-size", paramLabel = "SIZE", description = "Largest file the code may write (default 64m).")
    String fileSize;

    @Option(names = "--open-files", paramLabel = "N", description = "Open file descriptors per process (default 1024).")
    Integer openFiles;

    @Option(names = "--disk", paramLabel = "SIZE", description = "Size of /tmp and of /workspace (default 128m).")
    String disk;

    Limits apply(Limits base) {
        long most = Limits.MAX_TIMEOUT.toSeconds();
        if (timeoutSeconds != null && (timeoutSeconds.isNaN() || timeoutSeconds <= 0 || timeoutSeconds > most)) {
            throw AirlockException.invalid("timeout " + timeoutSeconds + "s is out of range: give 0.01 to " + most + " seconds");
        }
        return LimitChanges.read(name -> true, this::value).applyTo(base);
    }

    /** The flag's value for {@code field}, null when it was left out. */
    private Number value(LimitField field) {
        return switch (field) {
            case MEMORY -> size("memory", memory);
            case PIDS -> pids;
            case CPUS -> cpus;
            case TIMEOUT -> timeoutSeconds;
            case OUTPUT -> size("output limit", outputLimit);
            case FILE_SIZE -> size("file size", fileSize);
            case OPEN_FILES -> openFiles;
            case DISK -> size("disk", disk);
        };
    }

    private static Long size(String name, String text) {
        return text == null ? null : Limits.parseSize(name, text);
    }
}
