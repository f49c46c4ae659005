package dev.airlock.egress;

/**
 * Decides whether one egress request that a {@link dev.airlock.core.RequestApproval} covers may be
 * sent. The proxy calls it on the requesting connection's own (virtual) thread, holding no lock,
 * after the network policy allowed the destination and before anything of the request (not even a
 * TCP connection) goes upstream; it may block as long as a person takes to answer. Timeouts are the
 * gate's to apply (a timeout must answer false); the proxy gives up on its own only after {@link
 * EgressProxy.Options#approvalTimeout()}, when the sandbox's proxy closes, or when a policy update
 * denies the destination, and then interrupts the waiting thread.
 *
 * <p>Every argument except {@code sandboxId} comes from the sandbox and is untrusted: {@code method}
 * is an HTTP token (as sent, so possibly lower-case; the method named by an {@code
 * X-HTTP-Method-Override} header when that is the covered one), {@code host} the normalized name the
 * sandbox connected to, {@code target} the request's origin-form path and query, printable ASCII,
 * cut to {@value #MAX_TARGET} characters (ending in {@code ...} when cut).
 */
@FunctionalInterface
public interface RequestGate {

    /** The longest {@code target} a gate is shown. */
    int MAX_TARGET = 512;

    /**
     * @return true to send the request on; false (or an exception, or an interrupt) refuses it and
     *         the sandbox gets {@code 403 Forbidden}
     */
    boolean approve(String sandboxId, String method, String host, int port, String target) throws InterruptedException;

    /** Refuses every covered request: the default when no gate is configured, so an approval never fails open. */
    RequestGate DENY_ALL = (sandboxId, method, host, port, target) -> false;

    /** Approves every covered request (tests, and operators who only want the requests recorded). */
    RequestGate ALLOW_ALL = (sandboxId, method, host, port, target) -> true;
}
