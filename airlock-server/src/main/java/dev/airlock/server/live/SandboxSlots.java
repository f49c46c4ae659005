package dev.airlock.server.live;

import dev.airlock.server.policy.Client;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The server's sandbox slots: one reservation mechanism for the server-wide limit
 * ({@code --max-sandboxes}) and each client's quota. A slot is taken, under one lock, before a
 * sandbox is created, and given back only when the sandbox is really gone (destroyed and its
 * runtime released) or its create failed. So concurrent creates cannot together pass a limit, and a
 * sandbox still being destroyed keeps counting.
 *
 * <p>A create takes its client's slot first (before it may wait for an approval) and the server's
 * slot after the approval, so a create waiting for a person holds no server-wide slot.
 *
 * <p>A destroyed sandbox answers before its runtime's teardown ends, and keeps its slot until then
 * ({@link Slot#tearingDown}). A create that finds its limit held only by such sandboxes waits for
 * one to be gone, at most {@link #TEARDOWN_WAIT}, instead of being refused: a client that deletes
 * and creates again at its limit gets its sandbox.
 *
 * <p>On a node of a cluster, every create also takes a place in the cluster's database ({@link
 * SharedQuotas}), so a client's quota holds across all nodes, and no create is accepted while that
 * database does not answer; {@code --max-sandboxes} stays this node's own capacity.
 */
public final class SandboxSlots {

    /** The longest a create waits for a sandbox being torn down to give its slot back. */
    public static final Duration TEARDOWN_WAIT = Duration.ofSeconds(10);

    private final int serverMax;
    private final SharedQuotas shared;
    private final Map<String, Integer> perClient = new HashMap<>();
    /** Of those, the slots of sandboxes being torn down, per client. */
    private final Map<String, Integer> tearingPerClient = new HashMap<>();
    private int server;
    /** Of {@code server}, the slots of sandboxes being torn down. */
    private int serverTearing;

    public SandboxSlots(int serverMax) {
        this(serverMax, null);
    }

    /** {@code shared}: the cluster's count of clients' quotas; null on a server that runs alone. */
    public SandboxSlots(int serverMax, SharedQuotas shared) {
        this.serverMax = serverMax;
        this.shared = shared;
    }

    /** What asking for a slot gave: a slot, or which limit refused it and at what count. */
    public sealed interface Outcome permits Reserved, ClientQuotaReached, ServerFull {
    }

    public record Reserved(Slot slot) implements Outcome {
    }

    public record ClientQuotaReached(int held, int quota) implements Outcome {
    }

    public record ServerFull(int held, int max) implements Outcome {
    }

    /** Takes one of {@code client}'s slots (its quota, across the cluster on a node of one; unlimited when it has none). */
    public Outcome reserveForClient(Client client) {
        long deadline = System.nanoTime() + TEARDOWN_WAIT.toNanos();
        while (true) {
            String place = null;
            if (shared != null) {
                place = shared.reserve(client.name(), client.maxSandboxes());
                if (place == null) {
                    // the cluster's count is full; one of this node's teardowns may be what fills it
                    if (awaitTeardown(() -> tearingPerClient.getOrDefault(client.name(), 0) > 0, deadline)) {
                        continue;
                    }
                    return new ClientQuotaReached(client.maxSandboxes(), client.maxSandboxes());
                }
            }
            synchronized (this) {
                int held;
                while ((held = perClient.getOrDefault(client.name(), 0)) >= client.maxSandboxes() && client.maxSandboxes() > 0
                        && awaitTeardown(() -> tearingPerClient.getOrDefault(client.name(), 0) > 0, deadline)) {
                    // woken by a release: count again
                }
                if (client.maxSandboxes() > 0 && held >= client.maxSandboxes()) {
                    if (place != null) {
                        shared.release(place);
                    }
                    return new ClientQuotaReached(held, client.maxSandboxes());
                }
                perClient.put(client.name(), held + 1);
                return new Reserved(new Slot(client.name(), place));
            }
        }
    }

    /**
     * Waits (on this object's monitor) for a slot to be given back, while {@code tearing} says one
     * of the slots in the way belongs to a sandbox being torn down and the deadline has not passed;
     * false, at once, when there is nothing worth waiting for.
     */
    private synchronized boolean awaitTeardown(java.util.function.BooleanSupplier tearing, long deadline) {
        long left = deadline - System.nanoTime();
        if (!tearing.getAsBoolean() || left <= 0) {
            return false;
        }
        try {
            TimeUnit.NANOSECONDS.timedWait(this, left);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Sandboxes held or being created or destroyed, server-wide. */
    synchronized int held() {
        return server;
    }

    private synchronized Outcome takeServer(Slot slot) {
        if (slot.released) {
            throw new IllegalStateException("a released slot cannot take a server slot");
        }
        if (slot.server) {
            return new Reserved(slot);
        }
        long deadline = System.nanoTime() + TEARDOWN_WAIT.toNanos();
        while (server >= serverMax && awaitTeardown(() -> serverTearing > 0, deadline)) {
            // woken by a release: count again
        }
        if (server >= serverMax) {
            return new ServerFull(server, serverMax);
        }
        server++;
        slot.server = true;
        return new Reserved(slot);
    }

    private void release(Slot slot) {
        String giveBack;
        synchronized (this) {
            if (slot.released) {
                return;
            }
            slot.released = true;
            giveBack = slot.placeGivenBack ? null : slot.place;
            slot.placeGivenBack = true;
            if (slot.server) {
                server--;
            }
            perClient.computeIfPresent(slot.client, (k, n) -> n > 1 ? n - 1 : null);
            if (slot.tearingDown) {
                serverTearing -= slot.server ? 1 : 0;
                tearingPerClient.computeIfPresent(slot.client, (k, n) -> n > 1 ? n - 1 : null);
            }
            notifyAll();
        }
        if (giveBack != null) {
            shared.release(giveBack);
        }
    }

    /**
     * One sandbox's place in the counts, from before its create until it is gone. Releasing it
     * twice is harmless, so every path that ends a sandbox may release it.
     */
    public final class Slot {
        private final String client;
        /** Its place in the cluster's count of the client's quota, or null. */
        private final String place;
        private boolean server;   // guarded by SandboxSlots.this
        private boolean released; // guarded by SandboxSlots.this
        private boolean tearingDown; // guarded by SandboxSlots.this
        private boolean placeGivenBack; // guarded by SandboxSlots.this

        private Slot(String client, String place) {
            this.client = client;
            this.place = place;
        }

        /** Takes the server-wide slot for this client slot: a {@link Reserved} of itself, or {@link ServerFull}. */
        public Outcome takeServerSlot() {
            return takeServer(this);
        }

        /** Names the sandbox this slot is for, in the cluster's count (where it has a place there). */
        public void bind(String sandbox) {
            if (place != null) {
                shared.bind(place, sandbox);
            }
        }

        public void release() {
            SandboxSlots.this.release(this);
        }

        /**
         * Its sandbox is destroyed and being torn down: a create on this node may wait for this slot
         * ({@link #TEARDOWN_WAIT}). Its place in the cluster's count of the client's quota is given
         * back now: nothing of the sandbox runs any more, and a create on another node, which cannot
         * see this node's teardowns, would otherwise be refused until it ends; this node's own counts
         * hold the slot until the sandbox is gone.
         */
        public void tearingDown() {
            String giveBack;
            synchronized (SandboxSlots.this) {
                if (released || tearingDown) {
                    return;
                }
                tearingDown = true;
                serverTearing += server ? 1 : 0;
                tearingPerClient.merge(client, 1, Integer::sum);
                giveBack = placeGivenBack ? null : place;
                placeGivenBack = true;
            }
            if (giveBack != null) {
                shared.release(giveBack);
            }
        }
    }
}
