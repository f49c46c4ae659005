package dev.airlock.core;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Keeps a few never-used sandboxes of one spec running, so that creating one is a hand-over
 * instead of a container start. A pooled sandbox is handed out once and never comes back: after
 * use it is destroyed like any other. One virtual thread refills the pool after each hand-over,
 * once the sandbox handed over has served its first run ({@link #served}) or {@link #SERVE_WINDOW}
 * has passed, whichever is first: a refill is a container start, which on a small host would take
 * the CPU from the very run the pool serves (on two cores it doubled a one-shot's execution).
 */
final class WarmPool implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(WarmPool.class);
    /** How long a refill waits, at most, for the run of the sandbox handed over to end. */
    static final java.time.Duration SERVE_WINDOW = java.time.Duration.ofSeconds(1);

    private final Supplier<AttachedSandbox> create;
    private final SandboxSpec spec;
    private final int size;
    private final LinkedBlockingDeque<AttachedSandbox> ready = new LinkedBlockingDeque<>();
    private final Semaphore refill = new Semaphore(0);
    /** {@link System#nanoTime} of the oldest hand-over whose refill waits; 0: none waits. */
    private final java.util.concurrent.atomic.AtomicLong handedOverAt = new java.util.concurrent.atomic.AtomicLong();
    private final Thread filler;
    private volatile boolean closed;

    /** @param create makes one sandbox of {@code spec} */
    WarmPool(Supplier<AttachedSandbox> create, SandboxSpec spec, int size) {
        if (size < 0 || size > 1000) {
            throw AirlockException.invalid("pool size " + size + " is out of range: give 0 to 1000");
        }
        if (size > 0 && !spec.inputs().isEmpty()) {
            throw AirlockException.invalid("a warm pool cannot hold sandboxes with inputs: pool a spec without inputs");
        }
        this.create = create;
        this.spec = spec;
        this.size = size;
        this.filler = size == 0 ? null : Thread.ofVirtual().name("airlock-warm-pool").start(this::fill);
        refill.release();
    }

    /**
     * A ready sandbox if {@code wanted} is the pool's spec and one is ready; otherwise null. Never
     * for a spec with inputs: their host paths are checked and resolved when the sandbox is created,
     * so that must happen at the request, not minutes earlier.
     */
    AttachedSandbox take(SandboxSpec wanted) {
        if (size == 0 || closed || !spec.equals(wanted) || !wanted.inputs().isEmpty()) {
            return null;
        }
        AttachedSandbox ds;
        while ((ds = ready.pollFirst()) != null && !ds.sandbox().agent().isOpen()) {
            // It died while waiting (killed from outside the engine): never hand out a dead sandbox.
            ds.destroy();
        }
        if (ds != null) {
            handedOverAt.compareAndSet(0, System.nanoTime());
        }
        return ds;
    }

    /** The sandbox handed over has served its first run (or closed): refill now. */
    void served() {
        refill.release();
    }

    int readyCount() {
        return ready.size();
    }

    boolean isFull() {
        return ready.size() >= size;
    }

    private void fill() {
        while (!closed) {
            try {
                long since = handedOverAt.get();
                long window = SERVE_WINDOW.toNanos();
                // Nothing handed over: wake each second to retry a create that failed.
                long wait = since == 0 ? window : since + window - System.nanoTime();
                boolean asked = refill.tryAcquire(Math.max(0, wait), TimeUnit.NANOSECONDS);
                refill.drainPermits();
                since = handedOverAt.get();
                if (!asked && since != 0 && System.nanoTime() - since < window) {
                    continue;   // handed over while this thread slept: its window runs from then
                }
                handedOverAt.set(0);
                while (!closed && ready.size() < size) {
                    AttachedSandbox made = create.get();
                    made.sandbox().prepareForUse();
                    ready.addLast(made);
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                LOG.warn("warm pool could not create a sandbox: {}", e.getMessage());
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        if (filler != null) {
            // Wake the filler rather than interrupt it: an interrupted create fails half-way with a
            // misleading error; a finished one is destroyed below like every ready sandbox.
            refill.release();
            try {
                filler.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        AttachedSandbox ds;
        while ((ds = ready.pollFirst()) != null) {
            ds.destroy();
        }
    }
}
