package dev.airlock.agent;

import dev.airlock.core.AirlockException;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileTooLargeException;
import dev.airlock.core.SandboxAgent.Tree;
import dev.airlock.core.SandboxAgent.TreeBounds;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * The file operations of {@link AgentClient}: each encodes its request, registers what waits for
 * the answer, and waits. Everything the agent would treat as a malformed frame (and answer by
 * ending the sandbox) is refused here first, as a user error.
 */
final class AgentFiles {

    private final AgentClient client;

    AgentFiles(AgentClient client) {
        this.client = client;
    }

    /**
     * Streams in frames of {@link Frame#WRITE_CHUNK}: the first creates or truncates, the others
     * append, each acknowledged before the next is sent, so the agent never holds more than one.
     * Frames before the last carry the mode plus owner-write, so the agent can reopen the file for
     * the next one even when the final mode is read-only; the last carries the caller's mode.
     */
    long writeFile(String path, InputStream content, long maxBytes, int mode) throws IOException {
        checkPath(path);
        checkMode(mode);
        checkLimit(maxBytes);
        byte[] buffer = new byte[Frame.WRITE_CHUNK];
        long written = 0;
        boolean created = false;
        try {
            while (true) {
                long room = maxBytes - written;
                // One byte more than the room left, so that a stream over the limit is noticed.
                int wanted = room >= buffer.length ? buffer.length : (int) room + 1;
                int read = content.readNBytes(buffer, 0, wanted);
                if (read > room) {
                    throw new FileTooLargeException("cannot write " + path + " in the sandbox: the content is over the limit of "
                            + maxBytes + " bytes");
                }
                boolean last = read < wanted;
                sendChunk(path, buffer, read, last ? mode : mode | 0200, created ? Frame.WRITE_APPEND : 0);
                created = true;
                written += read;
                if (last) {
                    return written;
                }
            }
        } catch (IOException | RuntimeException e) {
            if (created) {
                removeQuietly(path, e);
            }
            throw e;
        }
    }

    private void sendChunk(String path, byte[] buffer, int length, int mode, int flags) throws IOException {
        int id = client.newId();
        PendingOperation write = new PendingOperation("cannot write " + path);
        client.request(id, write, new FrameBuilder(Frame.WRITE_FILE, "file " + path)
                .u32(id).string(path).u32(mode).u32(flags).bytes(buffer, 0, length).build());
        await(write.result(), "writing " + path);
    }

    /** A write that failed half way leaves no partial file behind; that cleanup failing is secondary. */
    private void removeQuietly(String path, Exception cause) {
        try {
            remove(path, false);
        } catch (IOException | RuntimeException e) {
            cause.addSuppressed(e);
        }
    }

    /** {@code noFollow}: refuse a symbolic link at any component of the path, not only the last. */
    void readFile(String path, long maxBytes, OutputStream sink, boolean noFollow) throws IOException {
        checkPath(path);
        checkLimit(maxBytes);
        int id = client.newId();
        PendingFileRead read = new PendingFileRead(path, maxBytes);
        client.request(id, read, new FrameBuilder(Frame.READ_FILE, "file " + path).u32(id).string(path).u64(maxBytes)
                .u32(noFollow ? Frame.READ_NOFOLLOW : 0).build());
        try {
            read.copyTo(sink, AgentClient.REPLY_TIMEOUT);
        } catch (TimeoutException e) {
            IOException failure = new IOException("the agent sent nothing for " + AgentClient.REPLY_TIMEOUT + " while reading " + path);
            client.abort(failure);
            throw failure;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading " + path, e);
        }
    }

    FileInfo stat(String path) throws IOException {
        checkPath(path);
        int id = client.newId();
        PendingStat stat = new PendingStat(path);
        client.request(id, stat, new FrameBuilder(Frame.STAT, "path " + path).u32(id).string(path).build());
        return await(stat.result(), "describing " + path);
    }

    List<FileInfo> list(String directory) throws IOException {
        checkPath(directory);
        int id = client.newId();
        PendingList list = new PendingList(directory);
        client.request(id, list, new FrameBuilder(Frame.LIST, "directory " + directory).u32(id).string(directory).build());
        return await(list.result(), "listing " + directory);
    }

    Tree walk(String directory, TreeBounds bounds) throws IOException {
        checkPath(directory);
        int id = client.newId();
        PendingWalk walk = new PendingWalk(directory, bounds);
        client.request(id, walk, new FrameBuilder(Frame.WALK, "directory " + directory).u32(id).string(directory)
                .u32(bounds.maxEntries()).u32(bounds.maxDepth()).build());
        return await(walk.result(), "walking " + directory);
    }

    void killAll() throws IOException {
        int id = client.newId();
        operation(id, "stop the sandbox's processes", new FrameBuilder(Frame.KILL_ALL, "request").u32(id));
    }

    void detach(String socketName) throws IOException {
        int id = client.newId();
        operation(id, "let go of the host channel", new FrameBuilder(Frame.DETACH, "socket name").u32(id).string(socketName));
    }

    /** DETACH on a device channel: {@code id} is the client's, so its reader knows the answer that ends it. */
    void detachDevice(int id) throws IOException {
        operation(id, "let go of the host channel", new FrameBuilder(Frame.DETACH, "socket name").u32(id).string("device"));
    }

    void mkdir(String path, boolean parents) throws IOException {
        await(mkdirWithoutWaiting(path, parents), "the request to create the directory " + path);
    }

    /** Sends the request to make directory {@code path}; the future completes with the agent's answer. */
    CompletableFuture<Void> mkdirWithoutWaiting(String path, boolean parents) throws IOException {
        checkPath(path);
        int id = client.newId();
        PendingOperation operation = new PendingOperation("cannot create the directory " + path);
        client.request(id, operation, new FrameBuilder(Frame.MKDIR, "directory " + path).u32(id).string(path)
                .u32(parents ? Frame.MKDIR_PARENTS : 0).build());
        return operation.result();
    }

    void remove(String path, boolean recursive) throws IOException {
        checkPath(path);
        int id = client.newId();
        operation(id, "remove " + path, new FrameBuilder(Frame.REMOVE, "path " + path)
                .u32(id).string(path).u32(recursive ? Frame.REMOVE_RECURSIVE : 0));
    }

    void rename(String from, String to) throws IOException {
        checkPath(from);
        checkPath(to);
        int id = client.newId();
        operation(id, "rename " + from + " to " + to, new FrameBuilder(Frame.RENAME, "paths " + from + " and " + to)
                .u32(id).string(from).string(to));
    }

    /** Sends a request answered by DONE or FAILED only, and waits. {@code action}: "remove /tmp/a". */
    private void operation(int id, String action, FrameBuilder frame) throws IOException {
        PendingOperation operation = new PendingOperation("cannot " + action);
        client.request(id, operation, frame.build());
        await(operation.result(), "the request to " + action);
    }

    private <T> T await(CompletableFuture<T> reply, String what) throws IOException {
        try {
            return client.awaitReply(reply, what);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while " + what, e);
        }
    }

    static void checkPath(String path) {
        if (!path.startsWith("/")) {
            throw AirlockException.invalid("file path '" + path + "' must be absolute");
        }
        if (path.getBytes(StandardCharsets.UTF_8).length >= Frame.PATH_MAX) {
            throw AirlockException.invalid("file path '" + path.substring(0, 64) + "...' is longer than "
                    + (Frame.PATH_MAX - 1) + " bytes");
        }
        // NUL bytes are refused by FrameBuilder.
    }

    static void checkMode(int mode) {
        if ((mode & ~07777) != 0) {
            throw AirlockException.invalid("file mode " + Integer.toOctalString(mode) + " is not a permission mode");
        }
    }

    private static void checkLimit(long maxBytes) {
        if (maxBytes < 0) {
            throw AirlockException.invalid("the size limit " + maxBytes + " is negative");
        }
    }
}
