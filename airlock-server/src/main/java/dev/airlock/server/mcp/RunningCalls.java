package dev.airlock.server.mcp;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Tool calls in progress, by call key (transport session + JSON-RPC request id), so that a
 * {@code notifications/cancelled} can reach the thread running the call. Interrupting that thread
 * is how an execution is cancelled: {@code Execution.await} then kills the process group.
 */
final class RunningCalls {

    /** A cancellation that arrived before its call started, kept briefly. */
    private static final long EARLY_CANCEL_MILLIS = 60_000;

    private final Map<String, Thread> running = new ConcurrentHashMap<>();
    private final Map<String, Long> cancelledEarly = new ConcurrentHashMap<>();

    /** Registers the current thread as running {@code key}; false if it was already cancelled. */
    boolean start(String key) {
        if (key == null) {
            return true;
        }
        if (cancelledEarly.remove(key) != null) {
            return false;
        }
        running.put(key, Thread.currentThread());
        return true;
    }

    void end(String key) {
        if (key != null) {
            running.remove(key, Thread.currentThread());
        }
    }

    void cancel(String key) {
        Thread t = running.remove(key);
        if (t != null) {
            t.interrupt();
            return;
        }
        long now = System.currentTimeMillis();
        cancelledEarly.values().removeIf(at -> now - at > EARLY_CANCEL_MILLIS);
        cancelledEarly.put(key, now);
    }
}
