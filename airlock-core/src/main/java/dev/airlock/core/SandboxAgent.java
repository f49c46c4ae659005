package dev.airlock.core;

import java.io.IOException;
import java.time.Duration;

/**
 * The host side of the in-sandbox agent: starts processes and places files inside one sandbox,
 * seen through the sandbox's own view of its filesystem. Every driver gives the same agent, so
 * the engine never depends on how the sandbox is isolated. Everything the agent sends is treated
 * as hostile: frames are bounded and malformed input closes the channel.
 */
public interface SandboxAgent extends AutoCloseable {

    /**
     * Starts {@code request.argv()} in a new session and process group, under a supervisor that
     * keeps everything it starts together (see {@link AgentProcess#signal}). The process's environment
     * is exactly {@code request.env()}. Output is passed to {@code listener} as it arrives.
     */
    AgentProcess start(ExecRequest request, OutputListener listener) throws IOException;

    /**
     * Creates or replaces a regular file inside the sandbox, creating missing parent directories.
     * The agent refuses to follow a symlink in the last component.
     */
    void writeFile(String path, byte[] content, int mode) throws IOException;

    /**
     * Streams {@code content} into a regular file inside the sandbox, creating missing parents and
     * replacing what was there; refuses a symlink as the last component. Fails with
     * {@link FileTooLargeException} once more than {@code maxBytes} were read from
     * {@code content} (the partial file is removed).
     *
     * @return the number of bytes written
     */
    long writeFile(String path, java.io.InputStream content, long maxBytes, int mode) throws IOException;

    /**
     * Streams a file's content to {@code sink}, in order, as the agent reads it. Refuses anything
     * that is not a regular file (a FIFO or device planted by the code cannot stall the agent) and
     * fails with {@link FileTooLargeException} if the file is larger than {@code maxBytes}.
     */
    void readFile(String path, long maxBytes, java.io.OutputStream sink) throws IOException;

    /**
     * Like {@link #readFile}, but refuses a symbolic link at any component of {@code path}, not only
     * the last: for what the host collects from a sandbox, which must never follow a link the
     * sandbox made.
     */
    void readFileNoFollow(String path, long maxBytes, java.io.OutputStream sink) throws IOException;

    /**
     * The tree under {@code directory}, depth-first, never following a symbolic link at any step
     * (the directory itself is reached without following one either; a directory swapped for a link
     * during the walk is not entered). At most {@code bounds.maxEntries()} entries of every kind are
     * looked at, directories at depth {@code bounds.maxDepth()} are not entered, and at most
     * {@code bounds.maxFiles()} regular files are kept (the rest only counted), so the host holds a
     * bounded amount whatever the sandbox made.
     */
    Tree walk(String directory, TreeBounds bounds) throws IOException;

    /**
     * Kills every process in the sandbox except the agent and waits until they are gone; no
     * process can start in the sandbox afterwards. For the end of a sandbox, before the host
     * collects what it leaves, so that nothing changes under the collection.
     *
     * @throws IOException if processes remain after the agent's wait, or the agent did not answer
     */
    void killAll() throws IOException;

    /** How much of a tree {@link #walk} looks at and keeps. */
    record TreeBounds(int maxEntries, int maxDepth, int maxFiles) {
        public TreeBounds {
            if (maxEntries < 1 || maxDepth < 1 || maxDepth > 256 || maxFiles < 0) {
                throw new IllegalArgumentException("tree bounds " + maxEntries + " entries, depth " + maxDepth + ", " + maxFiles
                        + " files: need at least one entry, a depth of 1 to 256 and no negative file count");
            }
        }
    }

    /**
     * What {@link #walk} saw: the regular files it kept (paths under the walked directory, sorted),
     * the entries it looked at, and where a bound cut it.
     *
     * @param entriesCut            the entry bound was reached: entries beyond it were not seen
     * @param directoriesNotEntered directories at the depth bound
     * @param filesLeftOut          regular files seen beyond {@code maxFiles}
     */
    record Tree(java.util.List<FileInfo> files, int entries, boolean entriesCut, int directoriesNotEntered, int filesLeftOut) {
        public Tree {
            files = java.util.List.copyOf(files);
        }
    }

    /** Describes one path without following a final symlink. */
    FileInfo stat(String path) throws IOException;

    /** The entries of a directory (not recursive), without following symlinks; at most 10000. */
    java.util.List<FileInfo> list(String directory) throws IOException;

    /** Creates a directory; with {@code parents}, missing parents too and no error if it exists. */
    void mkdir(String path, boolean parents) throws IOException;

    /**
     * As {@link #mkdir}, without waiting for the agent's answer: the request is sent, and every
     * request sent after it finds the directory made (the agent answers requests in order). The
     * future completes with the answer.
     */
    default java.util.concurrent.CompletableFuture<Void> mkdirWithoutWaiting(String path, boolean parents) {
        try {
            mkdir(path, parents);
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        } catch (IOException | RuntimeException e) {
            return java.util.concurrent.CompletableFuture.failedFuture(e);
        }
    }

    /** Removes a file, symlink or empty directory; with {@code recursive}, a whole tree (never following symlinks). */
    void remove(String path, boolean recursive) throws IOException;

    /** Renames within the sandbox; the target is replaced if it is a file. */
    void rename(String from, String to) throws IOException;

    /**
     * Opens a TCP connection to {@code 127.0.0.1:port} inside the sandbox, carried over the agent's
     * own channel (so the sandbox needs no network device, and it works the same under every driver).
     * For preview ports: a server the code started inside, reached from the host. Connections end when
     * the agent's channel closes.
     *
     * @param port 1 to 65535
     * @throws IllegalArgumentException if {@code port} is out of 1..65535
     * @throws PortConnection.RefusedException if nothing listens there ({@code ECONNREFUSED}), or the
     *         agent already carries its most port connections at once ({@code EMFILE}), or the connect
     *         failed otherwise (the errno it saw)
     * @throws IOException if the channel to the agent is closed or broke
     */
    PortConnection connect(int port) throws IOException;

    /** Whether the channel to the agent is still open. */
    boolean isOpen();

    /** Closes the channel. The agent answers by killing every process in the sandbox and exiting. */
    @Override
    void close();

    /** One process started through the agent. */
    interface AgentProcess {

        int pid();

        /** Appends to the process's standard input. */
        void writeStdin(byte[] bytes) throws IOException;

        /** Closes the process's standard input (the process reads end-of-file). */
        void closeStdin() throws IOException;

        /**
         * SIGKILL (9) kills the process and everything it started, whatever session or process
         * group they moved to; any other signal goes to the process's whole process group.
         */
        void signal(int signal) throws IOException;

        /**
         * Changes the size of the process's pseudo-terminal; the kernel sends SIGWINCH to its
         * foreground process group. Nothing happens once the process has ended.
         *
         * @throws IllegalStateException if the process was not started with a terminal
         */
        void resize(TerminalSize size) throws IOException;

        /**
         * Waits until the process has exited and its output has been delivered.
         *
         * @return the exit, or {@code null} if {@code timeout} passed first
         * @throws IOException if the channel to the agent broke before the exit was reported
         */
        ProcessExit await(Duration timeout) throws InterruptedException, IOException;
    }

    /** What stat and list report about one path. {@code linkTarget} is set for symlinks only. */
    record FileInfo(String path, FileType type, long size, int mode, long modifiedMillis, String linkTarget) {
    }

    enum FileType { FILE, DIRECTORY, SYMLINK, OTHER }

    /**
     * A file operation the agent refused, with the errno it saw, so callers can tell "not found"
     * from "not allowed" without parsing text.
     */
    class FileOperationException extends IOException {
        private final String errno;

        public FileOperationException(String errno, String message) {
            super(message);
            this.errno = errno;
        }

        /** The symbolic errno, such as {@code ENOENT}, {@code EEXIST}, {@code EISDIR}. */
        public String errno() {
            return errno;
        }
    }

    /** A file was larger than the caller's limit. */
    class FileTooLargeException extends IOException {
        public FileTooLargeException(String message) {
            super(message);
        }
    }

    /**
     * How a process ended: {@code signal} is 0 when it exited with {@code exitCode}; otherwise the
     * signal that killed it. {@code startError} is non-null when the program could not be started.
     */
    record ProcessExit(int exitCode, int signal, String startError) {
    }
}
