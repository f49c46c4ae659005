package dev.airlock.server.sandbox;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Credential;
import dev.airlock.core.Engine;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Input;
import dev.airlock.core.Isolation;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.server.audit.Audit;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.command.Command;
import dev.airlock.server.control.Admission;
import dev.airlock.server.live.ExecutionRecords;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.Sandboxes;
import dev.airlock.server.live.Tiers;
import dev.airlock.server.output.OutputStore;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.snapshot.SnapshotStore;
import dev.airlock.server.snapshot.WorkspaceTrees;
import dev.airlock.server.store.SandboxStore;
import dev.airlock.server.wire.Json;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

/**
 * Carries out the lifecycle commands once the controls let them through: create, extend, network
 * change and destroy, each recorded as a lifecycle record.
 */
public final class Lifecycle {

    private static final Logger LOG = LoggerFactory.getLogger(Lifecycle.class);

    private final Policy policy;
    private final Tiers tiers;
    private final Sandboxes sandboxes;
    private final SandboxStore store;
    private final SandboxTeardown teardown;
    private final SnapshotStore snapshots;
    private final ServerMetrics metrics;
    private final AuditLog audit;
    private final BooleanSupplier closing;
    /** This server's name in its cluster, for the sandboxes it holds; null when it runs alone. */
    private final String node;

    Lifecycle(Policy policy, Tiers tiers, Sandboxes sandboxes, SandboxStore store, SandboxTeardown teardown, SnapshotStore snapshots,
              ServerMetrics metrics, AuditLog audit, BooleanSupplier closing, String node) {
        this.node = node;
        this.snapshots = snapshots;
        this.policy = policy;
        this.tiers = tiers;
        this.sandboxes = sandboxes;
        this.store = store;
        this.teardown = teardown;
        this.metrics = metrics;
        this.audit = audit;
        this.closing = closing;
    }

    ManagedSandbox create(Admission a, Command.Create request) {
        Client client = a.caller().client();
        Profile p = a.profile();
        Admission.CreatePlan plan = a.create();
        List<Credential> credentials = p.credentials().stream().map(name -> policy.secrets().get(name).resolve()).toList();
        // the profile's image unless the request picked another it allows (ProfileCeilings checked that)
        String image = request.image() != null ? request.image() : p.image();
        SandboxSpec spec = new SandboxSpec(image, plan.limits(), request.env(), plan.network(), p.inputs(), credentials,
                p.requestApprovals());
        Engine engine = tiers.forProfile(p);
        Command.SnapshotView snap = request.snapshot() == null ? null : snapshots.get(request.snapshot(), client.name());
        // a file snapshot on a tier that layers /workspace: its files shared copy-on-write from one host tree
        WorkspaceTrees.TreeLease tree = snap != null && !snap.memory() && engine.driver().layersWorkspace()
                && !Boolean.getBoolean(SnapshotStore.COPY_WORKSPACE) ? snapshots.workspaceTree(snap) : null;
        Sandbox sandbox;
        try {
            sandbox = snap != null && snap.memory() ? restoreProcesses(engine, spec, snap)
                    : engine.create(tree == null ? spec : spec.withWorkspaceBase(tree.path()));
        } catch (RuntimeException e) {
            if (tree != null) {
                tree.close();
            }
            throw e;
        }
        ManagedSandbox managed = new ManagedSandbox(sandbox, client.name(), p, request.labels(), Instant.now(), plan.ttl(),
                plan.idleTimeout(), request.defaultLanguage(), engine.driver().isolation(), node);
        managed.holdSlot(a.holds().takeSlot());
        managed.holdWorkspaceTree(tree == null ? null : tree::close);
        try {
            if (p.outputBytes() > 0) {
                // ready for the code to write into, so that outputs need no set-up; not waited for: every
                // later request to the agent finds it made, and a sandbox without it only has no outputs
                String id = managed.id();
                sandbox.files().mkdirWithoutWaiting(OutputStore.DIR, true).exceptionally(e -> {
                    LOG.warn("sandbox {}: cannot make {}: {}", id, OutputStore.DIR, e.getMessage());
                    return null;
                });
            }
            store.insert(new SandboxStore.Row(managed.id(), engine.driver().instance(), managed.createdAt(), Json.specJson(spec)));
            if (snap != null) {
                restore(managed, snap, tree != null);
            }
        } catch (IOException | RuntimeException e) {
            sandbox.close();
            managed.releaseSlot();
            throw e instanceof RuntimeException re ? re : new AirlockException(Kind.UNAVAILABLE, "sandbox " + managed.id()
                    + " did not answer after it started: " + e.getMessage(), e);
        }
        sandboxes.add(managed);
        if (closing.getAsBoolean()) {
            // close() began after the check above and may not have seen this sandbox
            teardown.destroy(managed, "destroyed", "destroyed at shutdown");
            throw AirlockException.unavailable("the server is shutting down: sandbox " + managed.id() + " was destroyed at once");
        }
        metrics.sandboxCreated();
        Map<String, Object> d = AuditRecord.lifecycle("created", null);
        d.put("client", client.name());
        d.put("profile", p.name());
        d.put("image", image);
        if (sandbox.imageDigest() != null) {
            d.put("imageDigest", sandbox.imageDigest());
        }
        d.put("limits", ExecutionRecords.limits(plan.limits()));
        d.put("network", plan.network().summary());
        d.put("inputs", p.inputs().stream().map(Input::name).toList());
        d.put("credentials", p.credentials());
        d.put("ttlSeconds", plan.ttl().toSeconds());
        d.put("idleTimeoutSeconds", plan.idleTimeout().toSeconds());
        d.put("labels", request.labels().size());
        audit.record(AuditRecord.LIFECYCLE, managed.id(), d);
        return managed;
    }

    /**
     * A sandbox whose processes, memory and in-memory files are a memory snapshot's: its checkpoint
     * image is copied out of the store (checked part by part against the manifest) for the restore
     * and removed once the sandbox runs.
     */
    private Sandbox restoreProcesses(Engine engine, SandboxSpec spec, Command.SnapshotView snap) {
        Path image = null;
        try {
            image = snapshots.scratch();
            snapshots.copyCheckpoint(snap, image);
            return engine.restore(spec, image);
        } catch (IOException e) {
            throw AirlockException.unavailable("snapshot " + snap.id() + ": cannot copy its checkpoint image out: " + e.getMessage());
        } finally {
            if (image != null) {
                HostFiles.deleteTree(image);
            }
        }
    }

    /**
     * Writes the snapshot's files into the new sandbox, once sure it has the snapshot's image and the
     * snapshot is unaltered. A memory snapshot's files came back with its processes (they are in the
     * checkpoint image, which was checked as it was copied out): nothing is written then. Nor are
     * the files of /workspace when it lies on the snapshot's tree ({@code workspaceLayered}), which
     * was checked as it was made.
     */
    private void restore(ManagedSandbox managed, Command.SnapshotView snap, boolean workspaceLayered) throws IOException {
        String digest = managed.sandbox().imageDigest();
        if (!java.util.Objects.equals(digest, snap.imageDigest())) {
            throw new AirlockException(Kind.CONFLICT, "snapshot " + snap.id() + " was taken of image '" + snap.image() + "' with digest "
                    + snap.imageDigest() + "; that image's digest is now " + digest + ": its files are not restored on another image");
        }
        if (!snap.memory()) {
            snapshots.restore(snap, managed.sandbox().files(), workspaceLayered);
        }
        audit.record(AuditRecord.LIFECYCLE, managed.id(), snapshotEvent("restored", snap.id(), snap.digest()));
    }

    /** Captures the sandbox's files as a snapshot of its caller's, within the client's snapshot quota. */
    Command.SnapshotView snapshot(Admission a, Command.TakeSnapshot t) {
        ManagedSandbox s = a.sandbox();
        long quota = a.caller().client() == null ? Client.DEFAULT_SNAPSHOT_BYTES : a.caller().client().snapshotBytes();
        if (t.memory() && !s.isolation().savesProcesses()) {
            throw AirlockException.invalid("sandbox " + s.id() + " runs on the " + s.isolation().id() + " tier, where processes do not survive"
                    + " a snapshot (gVisor and the microVM tier, profiles with isolation: gvisor or microvm, can save them here): take the"
                    + " snapshot without \"memory\", which keeps its files");
        }
        Command.SnapshotView snap = snapshots.capture(s, s.sandbox().files(), t.ttl() == null ? SnapshotStore.DEFAULT_TTL : t.ttl(), quota,
                t.memory() ? s.sandbox()::checkpoint : null);
        Map<String, Object> d = snapshotEvent("snapshot", snap.id(), snap.digest());
        d.put("bytes", snap.bytes());
        d.put("files", snap.files());
        d.put("memory", snap.memory());
        audit.record(AuditRecord.LIFECYCLE, s.id(), d);
        LOG.info("sandbox {}: snapshot {} ({} files, {} bytes)", s.id(), snap.id(), snap.files(), snap.bytes());
        return snap;
    }

    static Map<String, Object> snapshotEvent(String event, String snapshot, String digest) {
        Map<String, Object> d = AuditRecord.lifecycle(event, null);
        d.put("snapshot", snapshot);
        if (digest != null) {
            d.put("digest", digest);
        }
        return d;
    }

    ManagedSandbox extend(Admission a, Command.ExtendTtl e) {
        a.sandbox().extend(e.ttl());
        // on the log under whoever extended it: its owner, or an operator through sandbox.any
        audit.record(AuditRecord.LIFECYCLE, a.sandbox().id(), AuditRecord.lifecycle("extended", "until " + a.sandbox().expiresAt()));
        return a.sandbox();
    }

    /** Pauses ({@code pause}) or resumes the sandbox, and records it when that changed anything. */
    ManagedSandbox pause(Admission a, boolean pause) {
        ManagedSandbox s = a.sandbox();
        if (s.setPaused(pause)) {
            audit.record(AuditRecord.LIFECYCLE, s.id(), AuditRecord.lifecycle(pause ? "paused" : "resumed", null));
            LOG.info("sandbox {}: {}", s.id(), pause ? "paused" : "resumed");
        }
        return s;
    }

    /** Pauses the sandbox to disk (its processes saved under the data directory and stopped), and records it when that changed anything. */
    ManagedSandbox pauseToDisk(Admission a) {
        ManagedSandbox s = a.sandbox();
        if (!s.isolation().savesProcesses()) {
            throw AirlockException.invalid("sandbox " + s.id() + " runs on the " + s.isolation().id() + " tier, where processes cannot be"
                    + " saved to disk (gVisor and the microVM tier, profiles with isolation: gvisor or microvm, can save them here): pause"
                    + " it without \"toDisk\", which freezes it in memory");
        }
        long started = System.nanoTime();
        if (toDisk(s)) {
            audit.record(AuditRecord.LIFECYCLE, s.id(), AuditRecord.lifecycle("paused", "to disk"));
            LOG.info("sandbox {}: paused to disk in {} ms", s.id(), (System.nanoTime() - started) / 1_000_000);
        }
        return s;
    }

    /**
     * Pauses to disk a sandbox left idle for its idle timeout ({@code onIdle: pauseToDisk}); one that
     * cannot be (an execution started meanwhile, a checkpoint that failed) is destroyed as an idle one is.
     */
    void park(ManagedSandbox s) {
        try {
            if (s.idle(java.time.Instant.now()) && toDisk(s)) {
                audit.record(AuditRecord.LIFECYCLE, Audit.SERVER, s.id(), AuditRecord.lifecycle("paused",
                        "to disk: idle for " + s.idleTimeout().toSeconds() + "s"));
                LOG.info("sandbox {}: paused to disk, idle for {}s", s.id(), s.idleTimeout().toSeconds());
            }
        } catch (RuntimeException e) {
            LOG.warn("sandbox {}: could not be paused to disk when idle, destroying it: {}", s.id(), e.getMessage());
            teardown.destroy(s, "expired", "expired: it was idle for " + s.idleTimeout().toSeconds() + "s and could not be paused to disk: "
                    + e.getMessage());
        } finally {
            s.parked();
        }
    }

    /** Pauses {@code s} to disk into its directory of the snapshot store; whether that changed anything. */
    private boolean toDisk(ManagedSandbox s) {
        return s.pauseToDisk(() -> snapshots.pausedImage(s.id()));
    }

    void destroy(Admission a) {
        if (!teardown.destroy(a.sandbox(), "destroyed", "destroyed on request")) {
            throw Sandboxes.notFound(a.sandboxId()); // expiry (or another request) got to it first
        }
    }

    /** A sandbox created without network cannot be given some later (the engine says CONFLICT). */
    ManagedSandbox updateNetwork(Admission a) {
        ManagedSandbox s = a.sandbox();
        s.sandbox().updateNetworkPolicy(a.network().narrowed());
        Map<String, Object> d = AuditRecord.lifecycle("network-updated", null);
        d.put("network", a.network().narrowed().summary());
        audit.record(AuditRecord.LIFECYCLE, s.id(), d);
        LOG.info("sandbox {}: network policy replaced ({})", s.id(), a.network().narrowed().summary());
        return s;
    }

    /**
     * Rows that earlier, dead servers left: their containers were reaped when the engine started;
     * what remains is to say so and forget them.
     */
    List<String> forgetOrphans() {
        List<String> reaped = new ArrayList<>(tiers.reapedAtStart());
        for (SandboxStore.Row row : store.leftBy(tiers.primary().driver().instance())) {
            if (!tiers.isAlive(row.instance())) {
                store.delete(row.id());
                audit.record(AuditRecord.LIFECYCLE, Audit.SERVER, row.id(), AuditRecord.lifecycle("reaped",
                        "created " + row.createdAt() + " by a server that is gone"));
                reaped.add("sandbox " + row.id() + " (created " + row.createdAt() + " by a server that is gone)");
                LOG.warn("reaped orphaned sandbox {} created {} by a server that is no longer running", row.id(), row.createdAt());
            }
        }
        return List.copyOf(reaped);
    }
}
