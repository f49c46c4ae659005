package dev.airlock.server.command;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

import java.io.IOException;

/**
 * How the REST door of a node of a cluster reaches the other nodes (docs/cluster.md, "Between
 * nodes"): where a request on a sandbox another node holds goes, where a create is placed, and the
 * call that carries a client's request there. The node that holds the sandbox (or is chosen for a
 * create) authorizes, records and carries out the request as if its own door had it; the node
 * that forwards decides nothing but where.
 */
public interface NodeRouting {

    /** A node of the cluster, as another node calls it: its name and its peer port's address and pinned certificate. */
    record Peer(String name, String address, String fingerprint) {
    }

    /**
     * A node that could not be reached (its port refused, the connection timed out, or it did not
     * show its published certificate) before anything of a request was sent: a create may go to
     * another node instead.
     */
    final class Unreached extends dev.airlock.core.AirlockException {
        public Unreached(String message) {
            super(Kind.UNAVAILABLE, message);
        }
    }

    /** The header a node's call carries: {@code NAME TIME-MS HMAC}, over the call's method, target, client and door. */
    String NODE_HEADER = "Airlock-Node";
    /** The client a node's call acts for (by name: every node has the same policy). */
    String CLIENT_HEADER = "Airlock-Client";
    /** The door the client used on the node that forwarded it ({@code rest}, {@code console}). */
    String VIA_HEADER = "Airlock-Via";
    /** Where a node's peer port takes an MCP tool call on a sandbox it holds, sent on by the node whose MCP door had it. */
    String TOOL_CALLS = "/v1/cluster/mcp/call";
    /**
     * Where a node's peer port learns that an MCP session of another node ended: it destroys the
     * sandboxes it made for that session's {@code sandbox_create} and {@code sandbox_fork}.
     */
    String SESSION_ENDED = "/v1/cluster/mcp/ended";
    /**
     * Where a node's peer port hands another node a snapshot it holds, for a fork there: {@code
     * /{id}}, its record, manifest and profile's tier; {@code /{id}/blobs/{digest}}, one blob.
     */
    String SNAPSHOTS = "/v1/cluster/snapshots";
    /**
     * Where a node's peer port takes a request of the E2B door on a sandbox it holds (or a create
     * placed on it), sent on by the node whose E2B door had it: the path after it is the door's own.
     */
    String E2B_DOOR = "/v1/cluster/e2b";
    /** The door name of a request of the E2B door sent on to another node. */
    String E2B_VIA = "e2b";

    /**
     * The node that holds sandbox {@code id}, when another node does; null when this node holds it
     * or none does (the door then answers as a server alone would). Throws GONE when the node that
     * held it, for {@code client}, is down or gone: the sandbox is lost (another client's lost
     * sandbox is null: it does not exist for this one).
     */
    Peer ownerOf(String id, String client);

    /**
     * The node where approval {@code id} waits, when another node's name is in it ({@code
     * ap-<node>-<hex>}); null when it is this node's, or names none. Throws GONE when that node is
     * down or gone.
     */
    Peer approvalOwner(String id);

    /**
     * The node that holds snapshot {@code id}, when another node's name is in it ({@code
     * snap-<node>-<hex>}); null when it is this node's, or names none. Throws GONE when that node is
     * down or gone.
     */
    Peer snapshotOwner(String id);

    /** The node a create of a sandbox on {@code tier} goes to: null for this node. */
    Peer place(String tier);

    /**
     * The node a fork of snapshot {@code id} (of {@code client}) goes to: the node that holds it
     * while it is up and has room (nothing to move), else the node placement chooses for the tier
     * of the snapshot's profile, which fetches its files (docs/cluster.md, "Snapshots"); null for
     * this node. Throws GONE when the node that holds it is down or gone.
     */
    Peer forkPlace(String id, String client);

    /**
     * Sends the request to {@code to} as {@code client} through door {@code via} (to the E2B door's
     * place on the peer port, {@link #E2B_DOOR}, for {@link #E2B_VIA}), and copies its
     * answer into {@code resp} as it arrives (a stream stays a stream). {@code body} is the body the
     * door already read, or null to stream the request's own. Throws {@link Unreached} when the node
     * could not be reached and nothing of the request was sent.
     */
    void forward(Peer to, HttpServletRequest req, HttpServletResponse resp, byte[] body, String client, String via) throws IOException;

    /**
     * Sends an MCP tool call ({@code call}: its {@code name}, {@code arguments} and the {@code
     * session} it came in, as JSON) to {@code to}, which holds the sandbox it names, as {@code
     * client} through MCP door {@code via}; returns the tool's result as JSON. The call lasts as
     * long as the tool does there, or {@code timeout} when not null.
     */
    byte[] callTool(Peer to, String client, String via, byte[] call, java.time.Duration timeout);

    /**
     * A key for {@code purpose} that every node of the cluster derives alike from the cluster's
     * secret (an HMAC of the purpose under it), so that what one node signs with it another checks.
     */
    byte[] key(String purpose);

    /**
     * Tells node {@code node} that this node's MCP session {@code session} of {@code client} ended,
     * so that it destroys what it made for that session; within {@link #ASK}, and a node that does
     * not answer is logged (what it made ends at its own idle time).
     */
    void sessionEnded(String node, String client, String session);

    /** This node's name in the cluster. */
    String nodeName();

    /** The other nodes that serve (up or draining); throws UNAVAILABLE when the cluster's database does not answer. */
    java.util.List<Peer> others();

    /** How long a node is waited for when every node is asked the same (a listing). */
    java.time.Duration ASK = java.time.Duration.ofSeconds(10);

    /**
     * What the other nodes answered a request asked of them all: the bodies of their {@code 200}s,
     * and, when some are missing, why (null when every serving node answered).
     */
    record Answers(java.util.List<byte[]> bodies, String partial) {
    }

    /**
     * Asks every other node that serves (up or draining) the same {@code GET}, as {@code client}
     * through door {@code via}, at once; each within a bound (docs/cluster.md, "Bounds").
     */
    Answers askOthers(HttpServletRequest req, String client, String via);

    /** A sandbox of a node that is down: lost with it (docs/cluster.md, "Failure"). */
    record Lost(String sandbox, String node, String state) {
        /** What a listing says of it. */
        public String message() {
            return "node '" + node + "', which held it, is " + state + ": the sandbox is lost";
        }
    }

    /** What a listing joined from every node says when {@code unanswered} (names, or words) did not answer; null when none. */
    static String partial(java.util.List<String> unanswered) {
        return unanswered.isEmpty() ? null : String.join(", ", unanswered) + " did not answer within " + ASK.toSeconds() + " s: what "
                + (unanswered.size() == 1 ? "it holds is" : "they hold is") + " missing";
    }

    /** The sandboxes of {@code client} that nodes now down held: listed as {@code lost} until those nodes return. */
    java.util.List<Lost> lost(String client);

    /**
     * A terminal's WebSocket (its attach) on a sandbox node {@code to} holds: the listener to upgrade
     * the client's request with, which opens the same attach on that node and relays both ways.
     */
    org.eclipse.jetty.websocket.api.Session.Listener relay(Peer to, HttpServletRequest req, String client, String via);

    /**
     * The client a call that arrived on this node's peer port acts for, when it carries a valid
     * node header (the cluster's secret, fresh); null otherwise.
     */
    String forwardedClient(HttpServletRequest req);
}
