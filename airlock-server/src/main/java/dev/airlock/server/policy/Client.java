package dev.airlock.server.policy;

import java.util.List;
import java.util.Set;

/**
 * One client of the server: who holds a token, and what that token grants.
 *
 * @param tokenSha256         SHA-256 of the bearer token; the token itself is never stored
 * @param profiles            the profiles it may create sandboxes with; the first is its default
 * @param operations          what it may call (REST endpoints and MCP tools alike)
 * @param maxSandboxes        live sandboxes it may hold at once (0: no quota of its own)
 * @param executionsPerMinute executions it may start in any 60 seconds (0: no quota)
 */
public record Client(String name, byte[] tokenSha256, List<String> profiles, Set<Operation> operations, int maxSandboxes,
                     int executionsPerMinute, long snapshotBytes) {

    /** What a client's snapshots may hold together when its policy names no {@code quotas.snapshotMiB}. */
    public static final long DEFAULT_SNAPSHOT_BYTES = 1L << 30;

    public Client {
        profiles = List.copyOf(profiles);
        operations = Set.copyOf(operations);
    }

    /** A client with the default snapshot quota. */
    public Client(String name, byte[] tokenSha256, List<String> profiles, Set<Operation> operations, int maxSandboxes,
                  int executionsPerMinute) {
        this(name, tokenSha256, profiles, operations, maxSandboxes, executionsPerMinute, DEFAULT_SNAPSHOT_BYTES);
    }

    public boolean may(Operation operation) {
        return operations.contains(operation);
    }

    public String rule(String field) {
        return "clients." + name + "." + field;
    }

    @Override
    public String toString() {
        return "Client[" + name + "]";
    }
}
