package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;
import picocli.CommandLine.Option;

import java.time.Duration;

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
        Limits l = base;
        if (timeoutSeconds != null) {
            if (timeoutSeconds.isNaN() || timeoutSeconds <= 0 || timeoutSeconds > 86_400) {
                throw AirlockException.invalid("timeout " + timeoutSeconds + "s is out of range: give 0.01 to 86400 seconds");
            }
            l = l.withTimeout(Duration.ofMillis(Math.round(timeoutSeconds * 1000)));
        }
        if (memory != null) {
            l = l.withMemoryBytes(Limits.parseSize("memory", memory));
        }
        if (cpus != null) {
            l = l.withCpus(cpus);
        }
        if (pids != null) {
            l = l.withPids(pids);
        }
        if (outputLimit != null) {
            l = l.withOutputBytes(Limits.parseSize("output limit", outputLimit));
        }
        if (fileSize != null) {
            l = l.withFileSizeBytes(Limits.parseSize("file size", fileSize));
        }
        if (openFiles != null) {
            l = l.withOpenFiles(openFiles);
        }
        if (disk != null) {
            l = l.withDiskBytes(Limits.parseSize("disk", disk));
        }
        return l;
    }
}
