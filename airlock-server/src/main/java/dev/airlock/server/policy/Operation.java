package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * What a client may be granted: each REST endpoint and each MCP tool is one of these, so a policy
 * names the same permission whichever door a client uses (the table is in docs/policy.md).
 */
public enum Operation {
    /** MCP run_code: a one-shot run in a sandbox that is destroyed afterwards. */
    RUN("run"),
    SANDBOX_CREATE("sandbox.create"),
    /** List and describe sandboxes, their network policy, egress records and processes. */
    SANDBOX_READ("sandbox.read"),
    SANDBOX_DESTROY("sandbox.destroy"),
    /** Extend a sandbox's lifetime (within its profile's maximum). */
    SANDBOX_EXTEND("sandbox.extend"),
    /** Pause a sandbox (freeze its processes) and resume it. */
    SANDBOX_PAUSE("sandbox.pause"),
    /** Take, list, describe and delete snapshots of sandboxes (restoring one is a sandbox.create). */
    SANDBOX_SNAPSHOT("sandbox.snapshot"),
    /** Run commands and code, start and signal background processes. */
    EXEC("exec"),
    FILES_READ("files.read"),
    FILES_WRITE("files.write"),
    NETWORK_UPDATE("network.update"),
    /** List, download and delete the outputs collected from ended sandboxes. */
    OUTPUTS("outputs"),
    /** List pending approvals and decide them: an operator's permission, not an agent's. */
    APPROVALS("approvals"),
    /** Read the audit log and check its chain (REST, the web console): an operator's permission. */
    AUDIT("audit"),
    METRICS("metrics"),
    /** List the nodes of the cluster this server is one of (docs/cluster.md). */
    CLUSTER_READ("cluster.read"),
    /** Stop or resume placements on a node of the cluster: an operator's permission. */
    CLUSTER_DRAIN("cluster.drain"),
    /**
     * An operator's reach: with it, the client's {@code sandbox.read}, {@code files.read} (listing
     * and stat only), {@code sandbox.extend} and {@code sandbox.destroy} act on every client's
     * sandboxes, not only its own. It grants no endpoint by itself, and never reaches into what
     * runs in another's sandbox: executions, process output, file contents, writes, network
     * changes and snapshots stay the owner's ({@code Command#reachesAnyOwner}). {@code "*"} does
     * not include it: it must be named, so a policy written before it gains no cross-client reach.
     */
    SANDBOX_ANY("sandbox.any");

    private final String id;

    Operation(String id) {
        this.id = id;
    }

    public String id() {
        return id;
    }

    public static Operation parse(String id) {
        for (Operation o : values()) {
            if (o.id.equals(id)) {
                return o;
            }
        }
        throw AirlockException.invalid("unknown operation '" + id + "': choose from " + names() + ", or \"*\" for all but sandbox.any");
    }

    /** What {@code "*"} in a policy's {@code allow} grants: every operation but {@link #SANDBOX_ANY}. */
    public static java.util.Set<Operation> all() {
        return java.util.EnumSet.complementOf(java.util.EnumSet.of(SANDBOX_ANY));
    }

    public static String names() {
        return Arrays.stream(values()).map(Operation::id).collect(Collectors.joining(", "));
    }
}
