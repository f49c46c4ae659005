package dev.airlock.egress;

import dev.airlock.core.Printable;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;

/**
 * Holds a request that a request approval covers until the {@link RequestGate} answers, with
 * nothing sent upstream meanwhile (not even a TCP connection is made). The gate is asked on the
 * connection's own thread, with no lock held; while it waits only the approval timeout applies,
 * and a cut (proxy closed, policy update, that timeout) interrupts it and counts as a refusal,
 * whatever the gate answers afterwards.
 */
final class ApprovalHold {

    private static final Logger LOG = LoggerFactory.getLogger(ApprovalHold.class);
    /** The most of a refused request's body read (and dropped) so that the client gets to read the refusal. */
    static final long MAX_DISCARDED_BODY = 1 << 20;

    private final String sandboxId;
    private final Interception interception;
    private final RequestGate gate;

    ApprovalHold(String sandboxId, Interception interception, RequestGate gate) {
        this.sandboxId = sandboxId;
        this.interception = interception;
        this.gate = gate;
    }

    /**
     * True when the request may go on: no approval covers it, or a person approved it. Otherwise
     * the client has been answered 403 (unless the connection was cut) and the record says why.
     *
     * @param methods the methods the request may act as (its own, then any an override header names)
     * @param length  the body's length, or -1 for chunked: a small one is read and dropped after a refusal
     */
    boolean pass(EgressConnection c, List<String> methods, String path, long length, InputStream fromClient, OutputStream toClient)
            throws IOException {
        String destination = c.record.destination();
        int port = c.record.port();
        String held = interception.approvalFor(methods, destination, port);
        if (held == null) {
            return true;
        }
        boolean yes = ask(c, held, destination, port, path);
        c.record.approval(yes);
        if (!yes) {
            refuse(c, held, path, length, fromClient, toClient);
        }
        return yes;
    }

    private boolean ask(EgressConnection c, String method, String destination, int port, String path) {
        String target = Printable.of(path, RequestGate.MAX_TARGET);
        boolean yes = false;
        c.awaitApproval();
        try {
            if (c.cutBy() == null) {
                yes = gate.approve(sandboxId, method, destination, port, target);
            }
        } catch (InterruptedException e) {
            // cut while waiting: refused
        } catch (RuntimeException e) {
            LOG.warn("the request gate failed on {} {}:{} of {}; refused: {}", Printable.of(method), destination, port, sandboxId,
                    e.toString());
        } finally {
            c.approvalAnswered();
        }
        return yes && c.cutBy() == null;
    }

    /** The answer to a request the gate did not approve: 403, and nothing upstream. */
    private void refuse(EgressConnection c, String method, String path, long length, InputStream fromClient, OutputStream toClient)
            throws IOException {
        String cutBy = c.cutBy();
        String rule = "request approval: " + Printable.of(method) + " denied" + (cutBy != null ? " (" + cutBy + ")" : "");
        c.record.refused(rule);
        if (cutBy != null) {
            return;
        }
        toClient.write(HttpAnswers.error(403, rule, Printable.of(method) + " " + Printable.of(path) + " to "
                + c.record.destination() + ":" + c.record.port() + " needs a person's approval and was not approved"));
        toClient.flush();
        // Read a small body the client may still be sending, so that it sees the answer rather than a reset
        // (one that waits for 100 Continue closes instead, on this final answer; the idle timeout bounds the rest).
        if (length > 0 && length <= MAX_DISCARDED_BODY) {
            try {
                HttpBody.copyLength(fromClient, OutputStream.nullOutputStream(), length, n -> c.active());
            } catch (IOException e) {
                // the client went away: nothing to answer
            }
        }
    }
}
