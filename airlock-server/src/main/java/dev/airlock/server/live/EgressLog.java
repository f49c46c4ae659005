package dev.airlock.server.live;

import dev.airlock.server.command.Command;

import dev.airlock.egress.EgressRecord;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Egress records kept in memory for {@code GET /v1/sandboxes/{id}/egress}: the newest
 * {@link #PER_SANDBOX} per sandbox, for the {@link #SANDBOXES} sandboxes that recorded most
 * recently. Not an audit log: it is bounded and does not survive a restart.
 */
public final class EgressLog {

    public static final int PER_SANDBOX = Command.Egress.KEPT;
    static final int SANDBOXES = 1000;

    private final Map<String, Deque<EgressRecord>> bySandbox = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Deque<EgressRecord>> eldest) {
            return size() > SANDBOXES;
        }
    };

    public synchronized void add(EgressRecord r) {
        Deque<EgressRecord> q = bySandbox.computeIfAbsent(r.sandboxId(), k -> new ArrayDeque<>());
        q.addLast(r);
        while (q.size() > PER_SANDBOX) {
            q.removeFirst();
        }
    }

    /** Oldest first. */
    public synchronized List<EgressRecord> of(String sandboxId) {
        Deque<EgressRecord> q = bySandbox.get(sandboxId);
        return q == null ? List.of() : List.copyOf(q);
    }

    public synchronized void forget(String sandboxId) {
        bySandbox.remove(sandboxId);
    }
}
