package dev.airlock.server.output;

import dev.airlock.core.SandboxAgent;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The deadline of one output collection: when it passes, the agent's channel is closed, so a
 * request still waiting for the agent fails at once instead of holding the sandbox's end up. The
 * sandbox is being destroyed anyway; closing the channel only makes its agent kill what is left
 * and exit a little earlier.
 */
final class CollectionDeadline implements AutoCloseable {

    private final AtomicBoolean passed = new AtomicBoolean();
    private final Thread timer;

    private CollectionDeadline(SandboxAgent agent, Duration after) {
        this.timer = Thread.ofVirtual().name("airlock-collection-deadline").start(() -> {
            try {
                Thread.sleep(after);
            } catch (InterruptedException finishedInTime) {
                return;
            }
            passed.set(true);
            agent.close();
        });
    }

    static CollectionDeadline closing(SandboxAgent agent, Duration after) {
        return new CollectionDeadline(agent, after);
    }

    /** Whether the deadline passed (and the agent's channel was closed). */
    boolean passed() {
        return passed.get();
    }

    @Override
    public void close() {
        timer.interrupt();
    }
}
