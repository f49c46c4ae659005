package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** What one sandbox's connections share: the bytes relayed over its life and the connections holding a slot. */
final class SandboxBudget {

    private final AtomicLong bytes = new AtomicLong();
    private final AtomicInteger established = new AtomicInteger();

    long bytesUsed() {
        return bytes.get();
    }

    boolean bytesExhausted(NetworkPolicy policy) {
        return bytes.get() >= policy.maxBytes();
    }

    /** Counts {@code n} more bytes; true while the total stays within the policy's budget. */
    boolean spend(int n, NetworkPolicy policy) {
        return bytes.addAndGet(n) <= policy.maxBytes();
    }

    /** Takes a slot of {@code maxConnections}, before connecting, so a burst of connects cannot exceed it. */
    boolean takeSlot(NetworkPolicy policy) {
        if (established.incrementAndGet() > policy.maxConnections()) {
            established.decrementAndGet();
            return false;
        }
        return true;
    }

    void releaseSlot() {
        established.decrementAndGet();
    }

    int slotsTaken() {
        return established.get();
    }
}
