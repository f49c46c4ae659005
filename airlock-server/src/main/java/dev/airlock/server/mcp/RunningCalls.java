package dev.airlock.server.mcp;

import dev.airlock.server.audit.Audit;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Tool calls in progress, by call key (transport session + JSON-RPC request id), so that a
 * {@code notifications/cancelled} can reach the thread running the call. Interrupting that thread
 * is how an execution is cancelled: {@code Execution.await} then kills it and everything it started.
 *
 * <p>A call is tracked from the moment its {@code tools/call} message is seen ({@link #accept}), so
 * that a cancellation arriving before the handler starts still finds it; a cancellation of
 * anything else (an unknown id, a call that already ended) is ignored and leaves nothing behind.
 * Keys are bounded ({@link #MAX_ID_CHARS}), and so is the number of calls tracked
 * ({@link #MAX_CALLS}); a call seen but never started is forgotten after {@link #UNSTARTED_MILLIS}.
 */
final class RunningCalls {

    /** Calls tracked at once, across every session of the endpoint; beyond it a call is not cancellable. */
    static final int MAX_CALLS = 4096;
    /** A request id longer than this (as JSON text) is keyed by its digest, so a huge id is never kept. */
    static final int MAX_ID_CHARS = 128;
    /** A call seen but whose handler never started (the SDK refused it) is forgotten after this. */
    static final long UNSTARTED_MILLIS = 60_000;

    private static final class Call {
        final long seenAt = System.currentTimeMillis();
        volatile Thread thread;
        volatile boolean cancelled;
    }

    private final Map<String, Call> calls = new ConcurrentHashMap<>();

    /** The call key of request {@code idJson} (the id's JSON text) of {@code session}; bounded in length. */
    static String key(String session, String idJson) {
        String id = idJson.length() <= MAX_ID_CHARS ? idJson : Audit.digest(idJson);
        return session + "#" + id;
    }

    /** A tools/call with this key was received: track it, if there is room. */
    void accept(String key) {
        if (calls.size() >= MAX_CALLS) {
            long now = System.currentTimeMillis();
            calls.values().removeIf(c -> c.thread == null && now - c.seenAt > UNSTARTED_MILLIS);
            if (calls.size() >= MAX_CALLS) {
                return;
            }
        }
        calls.putIfAbsent(key, new Call());
    }

    /** Registers the current thread as running {@code key}; false if it was already cancelled. */
    boolean start(String key) {
        if (key == null) {
            return true;
        }
        Call c = calls.get(key);
        if (c == null) {
            return true; // not tracked (no room): runs, but cannot be cancelled
        }
        c.thread = Thread.currentThread();
        if (c.cancelled) {
            calls.remove(key, c);
            Thread.interrupted(); // a cancel that raced this start may have interrupted the thread already
            return false;
        }
        return true;
    }

    void end(String key) {
        if (key != null) {
            calls.remove(key);
        }
    }

    /** Cancels the call {@code key} if it is tracked; anything else is ignored. */
    void cancel(String key) {
        Call c = calls.get(key);
        if (c == null) {
            return;
        }
        c.cancelled = true;
        Thread t = c.thread;
        if (t != null && calls.remove(key, c)) {
            t.interrupt();
        }
    }

    /** How many calls are tracked now (for tests of the bound). */
    int size() {
        return calls.size();
    }
}
