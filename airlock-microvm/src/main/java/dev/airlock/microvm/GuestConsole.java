package dev.airlock.microvm;

import dev.airlock.core.Printable;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The guest's serial console, read from QEMU's socket as it comes and kept in memory, bounded: the
 * last {@value #KEEP_BYTES} bytes (for boot-failure messages) and the number of the guest kernel's
 * OOM-kill lines seen so far (lines of any length are matched on their first
 * {@value #LINE_BYTES} bytes). A guest may print without end; the host keeps no more than this, and
 * reading never stops, so the guest's console never blocks on a host that does not listen.
 */
final class GuestConsole implements AutoCloseable {

    static final int KEEP_BYTES = 64 * 1024;
    private static final int LINE_BYTES = 4096;
    /**
     * The console's kernel line for one OOM kill (printed at error level, so even under {@code quiet}):
     * "Out of memory: Killed process ..." when the guest runs out, "Memory cgroup out of memory:
     * Killed process ..." when the sandbox's cgroup reaches its limit.
     */
    static final String OOM_KILL_LINE = "ut of memory: Killed process";

    private final ReadableByteChannel channel;
    private final byte[] ring = new byte[KEEP_BYTES];
    private long written;
    private final StringBuilder line = new StringBuilder();
    private long oomKills;
    private final Thread reader;

    GuestConsole(ReadableByteChannel channel, String name) {
        this.channel = channel;
        this.reader = Thread.ofPlatform().daemon().name("airlock-console-" + name).start(this::read);
    }

    private void read() {
        ByteBuffer buffer = ByteBuffer.allocate(8192);
        try {
            while (channel.read(buffer.clear()) >= 0) {
                buffer.flip();
                synchronized (this) {
                    while (buffer.hasRemaining()) {
                        accept(buffer.get());
                    }
                }
            }
        } catch (IOException e) {
            // closed: the guest is being destroyed, or QEMU ended
        }
    }

    private void accept(byte b) {
        ring[(int) (written++ % KEEP_BYTES)] = b;
        if (b == '\n') {
            if (line.indexOf(OOM_KILL_LINE) >= 0) {
                oomKills++;
            }
            line.setLength(0);
        } else if (line.length() < LINE_BYTES) {
            line.append((char) (b & 0xff));
        }
    }

    synchronized long oomKills() {
        return oomKills;
    }

    /** The last {@code lines} non-empty lines kept, on one line, printable. */
    synchronized String tail(int lines) {
        int kept = (int) Math.min(written, KEEP_BYTES);
        byte[] text = new byte[kept];
        for (int i = 0; i < kept; i++) {
            text[i] = ring[(int) ((written - kept + i) % KEEP_BYTES)];
        }
        List<String> all = new String(text, StandardCharsets.ISO_8859_1).lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        if (all.isEmpty()) {
            return "(nothing)";
        }
        return Printable.of(String.join(" | ", all.subList(Math.max(0, all.size() - lines), all.size())), 2000);
    }

    /** How many bytes the guest printed in all, kept or not. */
    synchronized long written() {
        return written;
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing to release
        }
        try {
            reader.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
