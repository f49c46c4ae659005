package dev.airlock.server.output;

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
import java.util.concurrent.atomic.AtomicLong;

/**
 * A background process's stdout and stderr, written to two files as the process produces them
 * (no buffer beyond the chunk in hand), and counted against the budget its sandbox's processes
 * share on disk: past the budget, output is dropped and {@link #dropped()} says so. Writes after
 * {@link #close()} are dropped; a full disk stops the writing, not the process, and is logged once.
 */
public final class SpilledOutput implements OutputListener, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SpilledOutput.class);

    private final Path stdoutFile;
    private final Path stderrFile;
    private final FileChannel stdout;
    private final FileChannel stderr;
    private final AtomicLong stored;
    private final long budget;
    private volatile long stdoutBytes;
    private volatile long stderrBytes;
    private volatile boolean dropped;
    private boolean closed;
    private boolean failed;

    private SpilledOutput(Path stdoutFile, Path stderrFile, FileChannel stdout, FileChannel stderr, AtomicLong stored, long budget) {
        this.stdoutFile = stdoutFile;
        this.stderrFile = stderrFile;
        this.stdout = stdout;
        this.stderr = stderr;
        this.stored = stored;
        this.budget = budget;
    }

    /**
     * @param stored bytes the sandbox's processes hold on disk now, shared by them
     * @param budget the most they may hold
     */
    static SpilledOutput create(Path stdoutFile, Path stderrFile, AtomicLong stored, long budget) throws IOException {
        FileChannel out = open(stdoutFile);
        try {
            return new SpilledOutput(stdoutFile, stderrFile, out, open(stderrFile), stored, budget);
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
        stdoutBytes += write(stdout, chunk);
    }

    @Override
    public synchronized void stderr(byte[] chunk) {
        stderrBytes += write(stderr, chunk);
    }

    /** Writes what the budget lets through; returns how many bytes that was. */
    private int write(FileChannel file, byte[] chunk) {
        if (closed || failed) {
            return 0;
        }
        int n = charge(chunk.length);
        if (n < chunk.length) {
            dropped = true;
        }
        try {
            ByteBuffer b = ByteBuffer.wrap(chunk, 0, n);
            while (b.hasRemaining()) {
                file.write(b);
            }
            return n;
        } catch (IOException e) {
            failed = true;
            dropped = true;
            stored.addAndGet(-n);
            LOG.warn("could not store the output of a background process in {}: {}; the rest of its output is dropped",
                    stdoutFile.getParent(), e.getMessage());
            return 0;
        }
    }

    /** Takes up to {@code n} bytes of the shared budget. */
    private int charge(int n) {
        while (true) {
            long used = stored.get();
            int take = (int) Math.max(0, Math.min(n, budget - used));
            if (take == 0 || stored.compareAndSet(used, used + take)) {
                return take;
            }
        }
    }

    /** Gives the bytes of this process back to the budget: its files are being deleted. */
    synchronized void release() {
        close();
        stored.addAndGet(-(stdoutBytes + stderrBytes));
        stdoutBytes = 0;
        stderrBytes = 0;
    }

    /** Whether output was dropped because the sandbox's budget on disk was spent (or the disk failed). */
    public boolean dropped() {
        return dropped;
    }

    /** Bytes of stdout stored so far. */
    public long stdoutBytes() {
        return stdoutBytes;
    }

    public long stderrBytes() {
        return stderrBytes;
    }

    public Path stdoutFile() {
        return stdoutFile;
    }

    public Path stderrFile() {
        return stderrFile;
    }

    /** The first {@code max} bytes of a file, or fewer; empty if it is gone (evicted). */
    public static byte[] head(Path file, int max) {
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
