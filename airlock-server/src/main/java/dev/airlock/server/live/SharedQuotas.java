package dev.airlock.server.live;

/**
 * Clients' quotas counted across the nodes of a cluster (docs/cluster.md): a place is taken in the
 * cluster's database, atomically against the places of the client on every node that is up, before
 * a sandbox is created, and given back when it is gone. {@link SandboxSlots} counts locally as well.
 */
public interface SharedQuotas {

    /**
     * Takes one of {@code client}'s places: its id, or null when the client already holds {@code
     * quota} across the cluster (0: no quota). Throws UNAVAILABLE when the cluster's database does
     * not answer.
     */
    String reserve(String client, int quota);

    /** Names the sandbox a place holds, once it is created, so every node finds the node it is on. */
    void bind(String place, String sandbox);

    /** Gives a place back; a place that cannot be given back now is given back later. */
    void release(String place);
}
