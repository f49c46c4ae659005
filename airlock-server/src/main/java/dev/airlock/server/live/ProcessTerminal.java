package dev.airlock.server.live;

import dev.airlock.core.AirlockException;
import dev.airlock.core.ExecResult;
import dev.airlock.core.OutputListener;
import dev.airlock.server.output.SpilledOutput;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The pseudo-terminal of a background process started with {@code "tty": true}: its output goes,
 * as it comes, to the process's files (as every background process's does) and to each WebSocket
 * attached at that moment (a {@link Screen}); when the process ends, each socket gets its
 * exit and is closed. At most {@value #MAX_PER_PROCESS} sockets per process and
 * {@value #MAX_PER_SANDBOX} per sandbox are attached at once.
 */
public final class ProcessTerminal implements OutputListener {

    /** Where an attached terminal's output goes: a WebSocket, in the terminal feature. */
    public interface Screen {

        /** A chunk of the terminal's output, as it came. */
        void output(byte[] chunk);

        /** The process ended ({@code result} null when its end could not be read): send the exit, then close. */
        void exit(ExecResult result);
    }

    /** WebSockets attached to one process at once. */
    static final int MAX_PER_PROCESS = 4;
    /** WebSockets attached to the processes of one sandbox at once. */
    static final int MAX_PER_SANDBOX = 16;
    /** The end of a process whose result could not be read. */
    public static final ExecResult FAILED = new ExecResult(new byte[0], new byte[0], -1, dev.airlock.core.EndReason.CANCELLED, false,
            java.time.Duration.ZERO, "the process's end could not be read");

    private final String processId;
    private final SpilledOutput files;
    /** Attached sockets of the whole sandbox (shared by its processes' terminals). */
    private final AtomicInteger sandboxSockets;
    private final List<Screen> sockets = new CopyOnWriteArrayList<>();
    private ExecResult ended;

    ProcessTerminal(String processId, SpilledOutput files, AtomicInteger sandboxSockets) {
        this.processId = processId;
        this.files = files;
        this.sandboxSockets = sandboxSockets;
    }

    @Override
    public void stdout(byte[] chunk) {
        files.stdout(chunk);
        for (Screen s : sockets) {
            s.output(chunk);
        }
    }

    @Override
    public void stderr(byte[] chunk) {
        files.stderr(chunk);   // a terminal is one stream: the agent sends none
    }

    /**
     * Refuses, before a WebSocket upgrade, an attach that would be over a bound (the attach itself
     * checks again: two may race for the last place).
     *
     * @throws AirlockException (limit) when the process or its sandbox has its most sockets
     */
    public synchronized void checkRoom() {
        if (sockets.size() >= MAX_PER_PROCESS) {
            throw new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED, "process " + processId + " already has " + MAX_PER_PROCESS
                    + " WebSockets attached, the most one process may have: close one first");
        }
        if (sandboxSockets.get() >= MAX_PER_SANDBOX) {
            throw new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED, "the processes of this sandbox already have " + MAX_PER_SANDBOX
                    + " WebSockets attached, the most one sandbox may have: close one first");
        }
    }

    /**
     * Adds an open socket. Returns null if it was added (it gets output from now on), else why
     * not: the process ended (its result), or a bound was reached meanwhile (an exception).
     */
    public synchronized Object attach(Screen socket) {
        if (ended != null) {
            return ended;
        }
        try {
            checkRoom();
        } catch (AirlockException e) {
            return e;
        }
        sandboxSockets.incrementAndGet();
        sockets.add(socket);
        return null;
    }

    /** Removes a socket, closed by either side; nothing if it was not attached. */
    public synchronized void detach(Screen socket) {
        if (sockets.remove(socket)) {
            sandboxSockets.decrementAndGet();
        }
    }

    /**
     * The process ended, all its output delivered: every socket gets the exit, then a close.
     *
     * @param result null if its end could not be read (the sockets are closed with 1011)
     */
    public void ended(ExecResult result) {
        synchronized (this) {
            ended = result == null ? FAILED : result;
        }
        for (Screen s : sockets) {
            s.exit(result);
        }
    }

    synchronized int attached() {
        return sockets.size();
    }
}
