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
    METRICS("metrics");

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
        throw AirlockException.invalid("unknown operation '" + id + "': choose from " + names() + ", or \"*\" for all");
    }

    public static String names() {
        return Arrays.stream(values()).map(Operation::id).collect(Collectors.joining(", "));
    }
}
