package dev.airlock.server;

import dev.airlock.core.OutputListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A background process's stdout and stderr, written to two files as the process produces them
 * (no buffer beyond the chunk in hand), and counted. Writes after {@link #close()} are dropped; a
 * full disk stops the writing, not the process, and is logged once.
 */
final class SpilledOutput implements OutputListener, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SpilledOutput.class);

    private final Path stdoutFile;
    private final Path stderrFile;
    private final FileChannel stdout;
    private final FileChannel stderr;
    private volatile long stdoutBytes;
    private volatile long stderrBytes;
    private boolean closed;
    private boolean failed;

    private SpilledOutput(Path stdoutFile, Path stderrFile, FileChannel stdout, FileChannel stderr) {
        this.stdoutFile = stdoutFile;
        this.stderrFile = stderrFile;
        this.stdout = stdout;
        this.stderr = stderr;
    }

    static SpilledOutput create(Path stdoutFile, Path stderrFile) throws IOException {
        FileChannel out = open(stdoutFile);
        try {
            return new SpilledOutput(stdoutFile, stderrFile, out, open(stderrFile));
        } catch (IOException e) {
            out.close();
            Files.deleteIfExists(stdoutFile);
            throw e;
        }
    }

    private static FileChannel open(Path file) throws IOException {
        return FileChannel.open(file, java.util.Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                java.nio.file.attribute.PosixFilePermissions.asFileAttribute(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
    }

    @Override
    public synchronized void stdout(byte[] chunk) {
        if (write(stdout, chunk)) {
            stdoutBytes += chunk.length;
        }
    }

    @Override
    public synchronized void stderr(byte[] chunk) {
        if (write(stderr, chunk)) {
            stderrBytes += chunk.length;
        }
    }

    private boolean write(FileChannel file, byte[] chunk) {
        if (closed || failed) {
            return false;
        }
        try {
            ByteBuffer b = ByteBuffer.wrap(chunk);
            while (b.hasRemaining()) {
                file.write(b);
            }
            return true;
        } catch (IOException e) {
            failed = true;
            LOG.warn("could not store the output of a background process in {}: {}; the rest of its output is dropped",
                    stdoutFile.getParent(), e.getMessage());
            return false;
        }
    }

    /** Bytes of stdout stored so far. */
    long stdoutBytes() {
        return stdoutBytes;
    }

    long stderrBytes() {
        return stderrBytes;
    }

    Path stdoutFile() {
        return stdoutFile;
    }

    Path stderrFile() {
        return stderrFile;
    }

    /** The first {@code max} bytes of a file, or fewer; empty if it is gone (evicted). */
    static byte[] head(Path file, int max) {
        try (InputStream in = Files.newInputStream(file)) {
            return in.readNBytes(max);
        } catch (IOException e) {
            return new byte[0];
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            stdout.close();
            stderr.close();
        } catch (IOException e) {
            LOG.warn("could not close the output files of a background process in {}: {}", stdoutFile.getParent(), e.getMessage());
        }
    }
}
