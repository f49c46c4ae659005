package dev.airlock.core;

import java.util.List;

/**
 * Creates, and destroys, isolated sandboxes of one kind (an OCI runtime, later a microVM). A
 * driver knows how to isolate; it knows nothing of clients, policies, egress or credentials: it is
 * handed a spec that already says everything, and a {@link SandboxBroker} that sets up the
 * sandbox's run directory. Every sandbox it returns is running, with its agent connected.
 */
public interface IsolationDriver extends AutoCloseable {

    /** A short name for logs and {@code doctor}, such as {@code oci/runc}. */
    String name();

    /** The tier of isolation this driver's sandboxes get. */
    Isolation isolation();

    /**
     * The name of this driver instance. Ids of the sandboxes it creates carry it, so that what a
     * crashed instance left behind can be found and reaped by the next one.
     */
    String instance();

    /** The images, beside {@code system}, that this driver's sandboxes may start from; none by default. */
    default List<ImageInfo> images() {
        return List.of();
    }

    /**
     * Whether this driver makes a sandbox's {@code /workspace} an overlay on {@link
     * SandboxSpec#workspaceBase()} (the snapshot's files shared copy-on-write by every sandbox
     * restored from it); when not, a restore writes the files into each sandbox. No by default.
     */
    default boolean layersWorkspace() {
        return false;
    }

    /** Checks that {@code spec} can be served before anything is created (image, interpreters). */
    void check(SandboxSpec spec, List<String> requiredPrograms);

    /**
     * Starts a sandbox. Once its run directory exists (to be mounted at {@link SandboxBroker#RUN_DIR})
     * and before the sandbox starts, the driver calls {@code broker.attach} exactly once, and bridges
     * the agent to the attachment's socket when it is {@link SandboxBroker.Attachment#bridged()
     * bridged}. The attachment belongs to the caller: the driver never closes it. On failure nothing
     * the driver made is left behind.
     *
     * @throws AirlockException if the sandbox cannot be created; the message names the cause
     */
    DriverSandbox create(SandboxId id, SandboxSpec spec, SandboxBroker broker);

    /**
     * Starts a sandbox as {@link #create} does, but with the processes, memory and in-memory files
     * that {@link DriverSandbox#checkpoint} saved in {@code checkpoint} instead of a fresh agent.
     * {@code spec} must be the one the checkpointed sandbox was made from (same image and limits). Only
     * a tier that can checkpoint can restore: elsewhere this says so (UNAVAILABLE), as this default does.
     */
    default DriverSandbox restore(SandboxId id, SandboxSpec spec, SandboxBroker broker, java.nio.file.Path checkpoint) {
        throw AirlockException.unavailable(noProcessesSaved(isolation()));
    }

    /** What a tier that cannot checkpoint says when asked to. */
    static String noProcessesSaved(Isolation tier) {
        return "processes do not survive a snapshot on " + (tier == null ? "this" : "the " + tier.id())
                + " tier (gVisor's runsc and the microVM tier can save them here): take the snapshot without memory, which keeps the files";
    }

    /** What a tier that cannot pause a sandbox to disk says when asked to. */
    static String noPauseToDisk(Isolation tier) {
        return "processes cannot be paused to disk on " + (tier == null ? "this" : "the " + tier.id())
                + " tier (gVisor's runsc and the microVM tier can save them here): pause it in memory instead";
    }

    /**
     * Creates a sandbox for the engine's warm pool, to be handed out later as a fresh one: as {@link
     * #create}, which this default is. A driver whose start is slow may make it from a started
     * sandbox of the same spec that it saved (the microVM driver restores a booted guest instead of
     * booting each), as long as what it hands out cannot be told from a created one.
     */
    default DriverSandbox createForPool(SandboxId id, SandboxSpec spec, SandboxBroker broker) {
        return create(id, spec, broker);
    }

    /** Starts a sandbox without a broker: it has no network ({@link SandboxBroker#NONE}). */
    default DriverSandbox create(SandboxId id, SandboxSpec spec) {
        return create(id, spec, SandboxBroker.NONE);
    }

    /**
     * Removes everything that instances no longer alive left behind: processes, runtime state,
     * cgroups, directories. Safe to call while other instances run.
     *
     * @return what was reaped, one line each, for the operator
     */
    List<String> reapOrphans();

    /** Whether the driver instance named {@code instance} (this one or another) is still alive. */
    boolean isAlive(String instance);

    /** Destroys every sandbox this instance still holds and releases the instance. */
    @Override
    void close();

    /**
     * A sandbox's resource use, as its cgroup counts it.
     *
     * @param cpuNanos    CPU time all its processes used since it started
     * @param memoryBytes memory it holds now (page cache included, as the memory limit counts it)
     */
    record Usage(long cpuNanos, long memoryBytes) {
    }

    /** One running sandbox, as the driver sees it. */
    interface DriverSandbox {

        SandboxId id();

        /** The channel to the sandbox's agent. */
        SandboxAgent agent();

        /**
         * The digest of the files of the image the sandbox's root is ({@code sha256:...}), or null for
         * an image assembled from the host ({@code system}), which has none.
         */
        default String imageDigest() {
            return null;
        }

        /**
         * The environment the sandbox's image sets for every process (such as an image recipe's
         * {@code environment}), under what the sandbox's spec and each request set; empty for most.
         */
        default java.util.Map<String, String> imageEnvironment() {
            return java.util.Map.of();
        }

        /** How many processes the kernel has OOM-killed in this sandbox so far. */
        long oomKills();

        /**
         * What the sandbox uses now, read from its cgroup where the driver has one it can read
         * cheaply (a file read, no call into the sandbox); null where it has none (the default).
         */
        default Usage usage() {
            return null;
        }

        /**
         * Readies the sandbox for a first execution that must start at once: a warm pool's sandbox,
         * which waits for its run. The container tier has its agent fork a spare execution
         * supervisor and places it (CgroupedAgent); a sandbox that is not pooled makes its spare
         * at its first execution instead, so that creating one costs only the sandbox (a fifth of
         * an idle create's CPU here). Nothing, where a driver has nothing to ready (the default).
         */
        default void prepareForUse() {
        }

        /**
         * Freezes every process of the sandbox, its agent included, until {@link #resume()}: a
         * frozen process is not scheduled, so it uses no CPU, and its memory stays as it is. A
         * driver that cannot freeze a sandbox says so (UNAVAILABLE), as this default does.
         */
        default void pause() {
            throw AirlockException.unavailable("sandbox " + id() + ": its isolation driver cannot pause a sandbox");
        }

        /** Thaws what {@link #pause()} froze. Resuming a sandbox that is not paused does nothing. */
        default void resume() {
            throw AirlockException.unavailable("sandbox " + id() + ": this isolation tier cannot pause or resume a sandbox");
        }

        /**
         * Saves every process of the sandbox with its memory and its in-memory files (/workspace, /tmp)
         * into the empty directory {@code dir}, for {@link IsolationDriver#restore}; the sandbox goes on
         * running afterwards, its agent reconnected. Refused (CONFLICT) while an execution runs. A tier
         * that cannot do it says so (UNAVAILABLE), as this default does.
         */
        default void checkpoint(java.nio.file.Path dir) {
            throw AirlockException.unavailable("sandbox " + id() + ": " + noProcessesSaved(null));
        }

        /**
         * Pauses the sandbox to disk: saves every process with its memory and in-memory files into
         * the empty directory {@code dir}, as {@link #checkpoint} does, then stops them, so that the
         * sandbox holds no memory or CPU until {@link #wake()} restores it in place (same id, its
         * processes where they were). The driver owns {@code dir} from then on: {@link #wake()} and
         * {@link #destroy()} remove it. Refused (CONFLICT) while an execution runs. A tier that cannot
         * do it says so (UNAVAILABLE), as this default does.
         */
        default void suspend(java.nio.file.Path dir) {
            throw AirlockException.unavailable("sandbox " + id() + ": " + noPauseToDisk(null));
        }

        /** Restores what {@link #suspend} saved, in place, and removes the saved image. */
        default void wake() {
            throw AirlockException.unavailable("sandbox " + id() + ": this isolation tier cannot pause to disk");
        }

        /** Kills every process and removes all state of the sandbox. Idempotent. */
        void destroy();
    }
}
