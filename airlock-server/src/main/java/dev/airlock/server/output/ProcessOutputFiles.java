package dev.airlock.server.output;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * Where the output of background processes goes instead of the heap:
 * {@code <data>/processes/<server instance>/<sandbox>/<process>.out|.err}. Each file holds at most
 * the sandbox's output limit (the core passes on only what it keeps). A sandbox's files go with it;
 * those of server instances no longer alive go at start. Every name in a path is the server's own
 * (instance, sandbox and process ids), never the sandbox's.
 */
public final class ProcessOutputFiles {

    private static final Logger LOG = LoggerFactory.getLogger(ProcessOutputFiles.class);

    private final Path root;
    private final Path own;

    /**
     * @param root     {@code <data>/processes}
     * @param instance this server's driver instance
     * @param alive    whether a driver instance (this one or another server's) still runs: the
     *                 files of the others are deleted now
     */
    public ProcessOutputFiles(Path root, String instance, Predicate<String> alive) {
        this.root = root;
        this.own = root.resolve(instance);
        try (DirectoryStream<Path> instances = Files.newDirectoryStream(root)) {
            for (Path dir : instances) {
                String name = dir.getFileName().toString();
                if (name.equals(instance) || !alive.test(name)) {
                    delete(dir);
                }
            }
        } catch (java.nio.file.NoSuchFileException e) {
            // nothing spilled yet
        } catch (IOException e) {
            LOG.warn("could not clear old background process output in {}: {}", root, e.getMessage());
        }
    }

    /** Opens the two files a new process writes its output to, within the budget its sandbox's processes share. */
    public SpilledOutput create(String sandboxId, String processId, AtomicLong stored, long budget) {
        Path dir = own.resolve(sandboxId);
        try {
            Files.createDirectories(own, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            return SpilledOutput.create(dir.resolve(processId + ".out"), dir.resolve(processId + ".err"), stored, budget);
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot store the output of a background process in " + root + ": " + e.getMessage()
                    + ": check that the data directory is writable and has space");
        }
    }

    /** Deletes the files of one process (evicted) and gives its bytes back to the budget; a reader that has one open reads on. */
    public void delete(SpilledOutput output) {
        output.release();
        try {
            Files.deleteIfExists(output.stdoutFile());
            Files.deleteIfExists(output.stderrFile());
        } catch (IOException e) {
            LOG.warn("could not delete background process output {}: {}", output.stdoutFile(), e.getMessage());
        }
    }

    /** Deletes everything the sandbox's processes left. */
    public void deleteSandbox(String sandboxId) {
        delete(own.resolve(sandboxId));
    }

    /** Streams one of the files from its start to its current end. */
    public static void copy(Path file, OutputStream sink) throws IOException {
        try (InputStream in = Files.newInputStream(file)) {
            in.transferTo(sink);
        } catch (java.nio.file.NoSuchFileException e) {
            // evicted or never written: nothing to send
        }
    }

    private static void delete(Path dir) {
        try {
            HostFiles.deleteTree(dir);
        } catch (AirlockException e) {
            LOG.warn("could not delete background process output {}: {}", dir, e.getMessage());
        }
    }
}
