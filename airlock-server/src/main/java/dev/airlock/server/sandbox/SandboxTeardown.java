package dev.airlock.server.sandbox;

import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.live.EgressLog;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.output.OutputStore;
import dev.airlock.server.output.ProcessOutputFiles;
import dev.airlock.server.store.SandboxStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Ends sandboxes, one destroy per sandbox at most, each independent of the others: expiry and
 * shutdown run every destroy on its own virtual thread, so one slow sandbox delays no other
 * tenant's. A destroy stops the sandbox's processes, collects its outputs (bounded, see
 * {@link OutputStore}), and always closes the sandbox, whatever was thrown before. Until then the
 * sandbox stays in the service's map, hidden from clients but counted against the limits; it gives
 * its slot back only once it is gone.
 */
final class SandboxTeardown {

    private static final Logger LOG = LoggerFactory.getLogger(SandboxTeardown.class);
    /**
     * Output collections that run at once. Each holds up to {@link OutputStore#MAX_FILES} names in
     * memory, so this bounds the heap many sandboxes ending together can take; processes are killed
     * before the wait, so a sandbox waiting here runs nothing.
     */
    static final int MAX_CONCURRENT_COLLECTIONS = 8;

    private final Map<String, ManagedSandbox> sandboxes;
    private final OutputStore outputs;
    private final AuditLog audit;
    private final SandboxStore store;
    private final EgressLog egressLog;
    private final ProcessOutputFiles processOutputs;
    private final ServerMetrics metrics;
    /** Destroys in flight, by sandbox id, so that shutdown can wait for every one of them. */
    private final Map<String, CompletableFuture<Void>> inFlight = new ConcurrentHashMap<>();
    private final java.util.concurrent.Semaphore collections = new java.util.concurrent.Semaphore(MAX_CONCURRENT_COLLECTIONS, true);

    SandboxTeardown(Map<String, ManagedSandbox> sandboxes, OutputStore outputs, ProcessOutputFiles processOutputs, AuditLog audit,
                    SandboxStore store, EgressLog egressLog, ServerMetrics metrics) {
        this.processOutputs = processOutputs;
        this.sandboxes = sandboxes;
        this.outputs = outputs;
        this.audit = audit;
        this.store = store;
        this.egressLog = egressLog;
        this.metrics = metrics;
    }

    /**
     * Destroys {@code s} on the calling thread and returns once nothing of it runs and its outputs
     * are collected; the rest of its teardown (the runtime's delete, its mounts and directories)
     * ends in the background, and its slot is held until then. False (and nothing done) when another
     * destroy of it is already in flight.
     */
    boolean destroy(ManagedSandbox s, String event, String why) {
        if (!s.beginDestroy()) {
            return false;
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        inFlight.put(s.id(), done);
        try {
            run(s, event, why);
        } finally {
            inFlight.remove(s.id());
            done.complete(null);
        }
        return true;
    }

    /** Starts destroying {@code s} on its own virtual thread, unless a destroy of it is in flight. */
    void destroyInBackground(ManagedSandbox s, String event, String why) {
        if (!s.beginDestroy()) {
            return;
        }
        CompletableFuture<Void> done = new CompletableFuture<>();
        inFlight.put(s.id(), done);
        Thread.ofVirtual().name("airlock-destroy-" + s.id()).start(() -> {
            try {
                run(s, event, why);
            } catch (Throwable t) {
                LOG.warn("could not destroy sandbox {} ({}): {}", s.id(), why, t.toString());
            } finally {
                inFlight.remove(s.id());
                done.complete(null);
            }
        });
    }

    /** Waits until every destroy in flight has ended, at most {@code timeout}; false if some had not. */
    boolean awaitAll(Duration timeout) {
        try {
            CompletableFuture.allOf(inFlight.values().toArray(CompletableFuture[]::new)).get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } catch (java.util.concurrent.ExecutionException e) {
            return true; // the futures only ever complete normally
        }
    }

    /** Stop, collect, close: the close and the bookkeeping run whatever the first two throw. */
    private void run(ManagedSandbox s, String event, String why) {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("event", event);
        d.put("reason", why);
        boolean stopped = false;
        try {
            boolean onDisk = s.sandbox().isOnDisk();
            boolean open = s.sandbox().isOpen() && !onDisk;
            if (onDisk) {
                LOG.info("outputs of sandbox {} not collected: it is paused to disk, and is discarded without being restored", s.id());
            } else if (!open) {
                LOG.warn("outputs of sandbox {} not collected: its agent's channel is closed (the agent ended)", s.id());
            }
            stopped = open && stop(s);
            d.put("outputs", stopped ? collect(s) : open ? Map.of("error", "processes could not be stopped")
                    : onDisk ? Map.of("error", "paused to disk: discarded without being restored") : null);
        } finally {
            CompletableFuture<Void> gone = null;
            try {
                // Stopped, nothing of it runs any more: the rest (the runtime's delete, its mounts and
                // directories) need not hold the answer up. Else the close itself ends what runs.
                if (stopped) {
                    s.slotTearingDown();
                    gone = s.sandbox().closeInBackground();
                } else {
                    s.sandbox().close();
                }
            } finally {
                // a sandbox still being torn down keeps its slot (SandboxSlots)
                if (gone == null) {
                    s.releaseSlot();
                } else {
                    gone.whenComplete((ignored, failure) -> s.releaseSlot());
                }
                sandboxes.remove(s.id(), s);
                audit.record(AuditRecord.LIFECYCLE, s.id(), d);
                store.delete(s.id());
                egressLog.forget(s.id());
                processOutputs.deleteSandbox(s.id());
                metrics.sandboxDestroyed();
                LOG.info("sandbox {} {}", s.id(), why);
            }
        }
    }

    /**
     * Kills every process of the sandbox but its agent; false if they could not be stopped (then
     * its outputs are not collected: its tree could still change under the walk).
     */
    private boolean stop(ManagedSandbox s) {
        try {
            s.sandbox().stopProcesses();
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.warn("outputs of sandbox {} not collected: its processes could not be stopped: {}", s.id(), e.getMessage());
            return false;
        }
    }

    /** Collects the outputs of a stopped sandbox; a summary for the audit record, or null. */
    private Map<String, Object> collect(ManagedSandbox s) {
        if (s.profile().outputBytes() <= 0) {
            return null;
        }
        try {
            collections.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            LOG.warn("outputs of sandbox {} not collected: interrupted while waiting for a collection slot", s.id());
            return null;
        }
        try {
            ObjectNode m = outputs.collect(s.id(), s.owner(), s.profile().name(), s.sandbox().files(), s.profile().outputBytes());
            if (m == null) {
                return null;
            }
            Map<String, Object> d = new LinkedHashMap<>();
            d.put("files", m.path("files").size());
            d.put("bytes", m.path("bytes").asLong());
            d.put("skipped", m.path("skipped").size());
            d.put("entries", m.path("entries").asInt());
            d.put("cut", m.path("cut").valueStream().map(c -> c.asString().substring(0, c.asString().indexOf(':'))).toList());
            return d;
        } catch (RuntimeException e) {
            LOG.warn("could not collect the outputs of sandbox {}: {}", s.id(), e.getMessage());
            return null;
        } finally {
            collections.release();
        }
    }
}
