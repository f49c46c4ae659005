package dev.airlock.server.live;

import dev.airlock.core.AirlockException;
import dev.airlock.server.policy.Client;

import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Each client's executions in the last minute, against its {@code executionsPerMinute} quota. */
public final class ExecutionRates {

    private static final long WINDOW_NANOS = 60_000_000_000L;
    private final Map<String, ArrayDeque<Long>> started = new ConcurrentHashMap<>();

    /** Counts one execution, or throws LIMIT_EXCEEDED naming the rule when the quota is used up. */
    public void acquire(Client client) {
        if (client.executionsPerMinute() <= 0) {
            return;
        }
        ArrayDeque<Long> times = started.computeIfAbsent(client.name(), k -> new ArrayDeque<>());
        synchronized (times) {
            long now = System.nanoTime();
            while (!times.isEmpty() && now - times.peekFirst() >= WINDOW_NANOS) {
                times.pollFirst();
            }
            if (times.size() >= client.executionsPerMinute()) {
                long waitSeconds = Math.max(1, (WINDOW_NANOS - (now - times.peekFirst())) / 1_000_000_000L);
                throw new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED, "client '" + client.name() + "' started "
                        + times.size() + " executions in the last minute, its quota (rule " + client.rule("quotas.executionsPerMinute")
                        + "): retry in " + waitSeconds + " s");
            }
            times.addLast(now);
        }
    }
}
