package dev.airlock.agent;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;

/**
 * One frame of the agent protocol (docs/agent-protocol.md): a 4-byte big-endian length N, a
 * 1-byte type, then N - 1 bytes of payload.
 */
record Frame(int type, ByteBuffer payload) {

    static final int EXEC = 1;
    static final int STDIN = 2;
    static final int SIGNAL = 3;
    static final int WRITE_FILE = 4;
    static final int EXEC_HELD = 5;
    static final int RELEASE = 6;
    static final int RESIZE = 7;
    static final int HELLO = 10;
    static final int STARTED = 11;
    static final int STDOUT = 12;
    static final int STDERR = 13;
    static final int EXIT = 14;
    static final int FAILED = 15;
    static final int DONE = 16;
    static final int DATA = 17;
    static final int FILEINFO = 18;
    static final int FORKED = 19;
    static final int READ_FILE = 20;
    static final int STAT = 21;
    static final int LIST = 22;
    static final int MKDIR = 23;
    static final int REMOVE = 24;
    static final int RENAME = 25;
    static final int WALK = 26;
    static final int KILL_ALL = 27;
    static final int DETACH = 28;
    static final int RESUME = 29;
    static final int PORT_OPEN = 30;
    static final int PORT_DATA = 31;
    static final int PORT_EOF = 32;
    static final int PORT_RESET = 33;
    static final int PORT_CREDIT = 34;
    static final int SPARE = 35;
    static final int EXEC_SPARE = 36;
    static final int NEXT_SPARE = 37;

    /** WRITE_FILE flag: append to the file an earlier frame created instead of replacing it. */
    static final int WRITE_APPEND = 1;
    /** MKDIR flag: create missing parents, and accept an existing directory. */
    static final int MKDIR_PARENTS = 1;
    /** REMOVE flag: remove a directory with everything in it. */
    static final int REMOVE_RECURSIVE = 1;
    /** READ_FILE flag: refuse a symbolic link at any component of the path. */
    static final int READ_NOFOLLOW = 1;

    /** Largest N (type and payload) either side may send. */
    static final int MAX_LENGTH = 1024 * 1024 + 64;
    /** Largest STDOUT or STDERR chunk the agent sends. */
    static final int MAX_OUTPUT_CHUNK = 64 * 1024;
    /** Largest DATA chunk the agent sends. */
    static final int MAX_DATA_CHUNK = 64 * 1024;
    /** Content per WRITE_FILE frame: half a frame, so one in flight never gets near the limit. */
    static final int WRITE_CHUNK = 512 * 1024;
    /** Longest path the agent accepts, in bytes (Linux PATH_MAX, including the terminator). */
    static final int PATH_MAX = 4096;
    /** Bytes either side of a port stream may have in flight per direction before credit comes back. */
    static final int PORT_WINDOW = 64 * 1024;
    /** Most bytes in one PORT_DATA, either way. */
    static final int PORT_CHUNK = 16 * 1024;
    /** Most entries one LIST reports; the agent fails a larger directory. */
    static final int MAX_LIST = 10_000;

    /**
     * Reads one frame. The length is checked before anything is allocated, so a hostile peer
     * cannot make us allocate more than {@link #MAX_LENGTH}.
     */
    static Frame read(ReadableByteChannel channel) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(4);
        readFully(channel, header, true);
        int length = header.getInt(0);
        if (length < 1 || length > MAX_LENGTH) {
            throw new AgentProtocolException("frame length " + Integer.toUnsignedString(length)
                    + " is outside 1.." + MAX_LENGTH);
        }
        ByteBuffer body = ByteBuffer.allocate(length);
        readFully(channel, body, false);
        int type = body.get(0) & 0xff;
        return new Frame(type, body.position(1).slice());
    }

    private static void readFully(ReadableByteChannel channel, ByteBuffer buffer, boolean atFrameStart) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw atFrameStart && buffer.position() == 0
                        ? new EOFException("the agent closed the connection")
                        : new AgentProtocolException("connection closed in the middle of a frame");
            }
        }
    }
}
