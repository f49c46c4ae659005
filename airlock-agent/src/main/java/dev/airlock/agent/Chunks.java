package dev.airlock.agent;

import java.util.ArrayDeque;

/**
 * Bytes received and not yet read, as the chunks they came in (a port stream's PORT_DATA frames):
 * read in order across chunks; each chunk read to its end is reported once, so that its length can
 * be credited back to the sender. Not thread-safe: its owner's lock guards it.
 */
final class Chunks {

    private final ArrayDeque<byte[]> chunks = new ArrayDeque<>();
    /** Bytes of the first chunk read already. */
    private int headOffset;
    /** Bytes of every chunk held, those of the first read already included. */
    private int bytes;
    /** The length of the chunk the last {@link #take} finished, or 0. */
    private int finished;

    /** Holds {@code chunk}; an empty one holds nothing (it has nothing to read or to credit). */
    void add(byte[] chunk) {
        if (chunk.length == 0) {
            return;
        }
        chunks.add(chunk);
        bytes += chunk.length;
    }

    /** Bytes held, read or not: what counts against the window until their chunk is read through. */
    int bytes() {
        return bytes;
    }

    /** Bytes not yet read. */
    int available() {
        return bytes - headOffset;
    }

    /** Reads up to {@code len} bytes of the first chunk into {@code b} at {@code off}; call only when {@link #available()} is not 0. */
    int take(byte[] b, int off, int len) {
        byte[] head = chunks.element();
        int n = Math.min(len, head.length - headOffset);
        System.arraycopy(head, headOffset, b, off, n);
        headOffset += n;
        finished = 0;
        if (headOffset == head.length) {
            chunks.remove();
            headOffset = 0;
            bytes -= head.length;
            finished = head.length;
        }
        return n;
    }

    /** The length of the chunk the last {@link #take} read through (to credit back), 0 when it did not. */
    int consumedChunk() {
        return finished;
    }
}
