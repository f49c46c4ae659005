package dev.airlock.server.command;

import dev.airlock.core.Isolation;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;

import java.util.Map;

/**
 * What a door may ask of the server: whether a client may use an operation at all, then commands,
 * each run through every control. The sandbox service implements it; a door holds nothing else
 * of the server (ArchitectureTest keeps it so), so no door can reach a sandbox around a control.
 */
public interface CommandApi {

    /**
     * What a door knows of a request when it asks whether it may go on. {@code repeats} says what
     * the request repeats when it is one of a stream made at will (a request through a preview link,
     * a read the console's refresh makes): its records are folded per that source and window
     * (docs/audit.md, "Folded requests"); null records it alone.
     */
    record Request(Client client, String via, String iface, String endpoint, Operation operation, String sandbox,
                   String argsDigest, Caller.Asker asker, Repeats repeats) {
    }

    /** The source a repeated request is folded under, and its window (null: the audit log's). */
    record Repeats(String source, java.time.Duration window) {
    }

    /**
     * Decides whether {@code r.client()} may use {@code r.operation()}, records the request and the
     * decision, and returns the caller to {@link #execute} the request's commands as. Throws the
     * refusal when the policy does not grant it.
     */
    Caller authorize(Request r);

    /** Records a request that ended before any decision (a bad body, say), so the audit log has every request. */
    void recordUndecided(Request r);

    /**
     * Records a request no client could be found for (a missing or wrong token), folded per source
     * and window (docs/audit.md).
     */
    void refuseUnauthenticated(String via, String iface, String endpoint, String sourceAddress, boolean tokenSent);

    /**
     * Records a request with a console session's cookie that the door refused before any operation
     * ({@code rule}: an Origin not the server's own, a missing CSRF token). A page of another site can
     * make a signed-in browser send these at will, so they are folded per client and rule
     * (docs/audit.md); {@code origin} is the page's, as its browser sent it.
     */
    void refuseCrossSite(Client client, String via, String endpoint, String origin, String rule);

    /** Carries out {@code command} for {@code caller}: every control, then its handler. */
    <R> R execute(Caller caller, Command<R> command);

    /** Records a lifecycle event of a sandbox that a door made (a preview link), as the current caller. */
    void recordLifecycle(String sandbox, Map<String, Object> detail);

    /** The policy the server enforces: clients, profiles and their grants. */
    Policy policy();

    /** Runs {@code listener} whenever an approval is requested or decided; it must return at once. */
    void onApprovalsChanged(Runnable listener);

    /** Sandboxes held, counting those being destroyed. */
    int size();

    /**
     * On a node of a cluster: its name and whether the cluster's database answers (it refuses
     * creates while it does not); null on a server that runs alone.
     */
    ClusterHealth clusterHealth();

    /** On a node of a cluster: how its REST door reaches the other nodes; null on a server that runs alone. */
    NodeRouting routing();

    /** What {@code /health} says of a node of a cluster. */
    record ClusterHealth(String node, boolean databaseAnswers) {
    }

    /** Whether sandbox {@code id} is live (not destroyed, whoever owns it): what ends its preview links. */
    boolean live(String id);

    /**
     * On a node of a cluster: snapshot {@code id} of {@code client} as another node fetches it for a
     * fork there (its record and manifest); NOT_FOUND for one this node does not hold.
     */
    dev.airlock.server.command.Command.HeldSnapshot exportSnapshot(String id, String client);

    /** On a node of a cluster: writes blob {@code digest} of snapshot {@code id} of {@code client} to {@code out}, checked as it is read. */
    void exportSnapshotBlob(String id, String client, String digest, java.io.OutputStream out) throws java.io.IOException;

    /** The tier sandboxes of {@code profile} get on this server. */
    Isolation isolation(Profile profile);
}
