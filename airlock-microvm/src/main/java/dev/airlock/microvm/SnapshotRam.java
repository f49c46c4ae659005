package dev.airlock.microvm;

import dev.airlock.core.AirlockException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A memory snapshot's guest RAM, loaded once into a sealed memory file (memfd) that every guest
 * restored from the snapshot maps privately: the pages none of them wrote are one copy in the
 * host's memory, each guest's writes are its own (copy-on-write). Sealed against writing, growing
 * and shrinking ({@code F_SEAL_WRITE}, {@code F_SEAL_GROW}, {@code F_SEAL_SHRINK}, then {@code
 * F_SEAL_SEAL}): a guest's QEMU opens it read-write, as QEMU 7.2 must to map a file privately
 * writable (its {@code readonly=on} maps it read-only), yet can change nothing another guest sees,
 * even if the code in its guest took QEMU over. Pages never written before the snapshot (zero) are
 * left as holes: they cost nothing until a guest touches them.
 *
 * <p>The jail of each restored guest opens it through {@link #path()} (this process's descriptor,
 * as host root) and hands it to QEMU on {@value Qemu#RAM_FD}. It lives while a guest uses it:
 * {@link #retain} and {@link #release} count them, and the last release closes it (each QEMU holds
 * its own reference while it runs).
 */
final class SnapshotRam {

    private static final int MFD_CLOEXEC = 1;
    private static final int MFD_ALLOW_SEALING = 2;
    private static final int F_ADD_SEALS = 1033;
    private static final int F_SEAL_SEAL = 1;
    private static final int F_SEAL_SHRINK = 2;
    private static final int F_SEAL_GROW = 4;
    private static final int F_SEAL_WRITE = 8;
    /** The granule of the copy: a run of zero bytes this long stays a hole. */
    private static final int CHUNK = 64 << 10;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle MEMFD_CREATE = handle("memfd_create",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
    private static final MethodHandle FTRUNCATE = handle("ftruncate",
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
    private static final MethodHandle FCNTL = LINKER.downcallHandle(LIBC.find("fcntl").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
            Linker.Option.captureCallState("errno"), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle CLOSE = handle("close", FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));

    private final int fd;
    private final AtomicInteger users = new AtomicInteger(1);

    private SnapshotRam(int fd) {
        this.fd = fd;
    }

    private static MethodHandle handle(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(LIBC.find(name).orElseThrow(), descriptor, Linker.Option.captureCallState("errno"));
    }

    /** Loads the RAM file {@code ram} ({@code size} bytes, holes where the guest's memory was zero) into a sealed memory file. */
    static SnapshotRam load(Path ram, long size) throws IOException {
        int fd;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CALL_STATE);
            fd = (int) MEMFD_CREATE.invokeExact(state, arena.allocateFrom("airlock-snapshot-ram"), MFD_CLOEXEC | MFD_ALLOW_SEALING);
            check(fd, state, "memfd_create");
            SnapshotRam loaded = new SnapshotRam(fd);
            try {
                check((int) FTRUNCATE.invokeExact(state, fd, size), state, "ftruncate");
                try (FileChannel in = FileChannel.open(ram, StandardOpenOption.READ);
                     FileChannel out = FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.WRITE)) {
                    if (in.size() != size) {
                        throw new IOException("the snapshot's RAM file is " + in.size() + " bytes, its guest had " + size);
                    }
                    copyNonZero(in, out, size);
                }
                check((int) FCNTL.invokeExact(state, fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL), state,
                        "fcntl(F_ADD_SEALS)");
                return loaded;
            } catch (IOException | RuntimeException | Error e) {
                loaded.closeFd();
                throw e;
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("native call failed: " + t, t);
        }
    }

    /**
     * Copies {@code size} bytes of {@code in} to the same offsets of {@code out}, skipping chunks of zeros (left as holes);
     * returns the bytes written.
     */
    static long copyNonZero(FileChannel in, FileChannel out, long size) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(CHUNK);
        long written = 0;
        for (long at = 0; at < size; at += CHUNK) {
            buffer.clear().limit((int) Math.min(CHUNK, size - at));
            while (buffer.hasRemaining()) {
                if (in.read(buffer, at + buffer.position()) < 0) {
                    throw new IOException("the RAM file ended at " + (at + buffer.position()) + " of " + size + " bytes");
                }
            }
            buffer.flip();
            if (isZero(buffer)) {
                continue;
            }
            written += buffer.remaining();
            while (buffer.hasRemaining()) {
                out.write(buffer, at + buffer.position());
            }
        }
        return written;
    }

    private static boolean isZero(ByteBuffer buffer) {
        for (int i = 0; i + 8 <= buffer.limit(); i += 8) {
            if (buffer.getLong(i) != 0) {
                return false;
            }
        }
        for (int i = buffer.limit() & ~7; i < buffer.limit(); i++) {
            if (buffer.get(i) != 0) {
                return false;
            }
        }
        return true;
    }

    private static void check(int rc, MemorySegment state, String call) throws IOException {
        if (rc < 0) {
            throw new IOException(call + " failed: errno " + (int) ERRNO.get(state, 0L));
        }
    }

    /** Where a host-root process opens it: this process's descriptor. */
    String path() {
        return "/proc/" + ProcessHandle.current().pid() + "/fd/" + fd;
    }

    int users() {
        return users.get();
    }

    /** One more guest uses it; false when it was closed already (the caller loads it again). */
    boolean retain() {
        while (true) {
            int n = users.get();
            if (n == 0) {
                return false;
            }
            if (users.compareAndSet(n, n + 1)) {
                return true;
            }
        }
    }

    /** A guest (or the loader) is done with it; the last one closes it. */
    void release() {
        if (users.decrementAndGet() == 0) {
            closeFd();
        }
    }

    private void closeFd() {
        try (Arena arena = Arena.ofConfined()) {
            int ignored = (int) CLOSE.invokeExact(arena.allocate(CALL_STATE), fd);
        } catch (Throwable t) {
            throw AirlockException.internal("cannot close a snapshot's memory file: " + t, t);
        }
    }
}
