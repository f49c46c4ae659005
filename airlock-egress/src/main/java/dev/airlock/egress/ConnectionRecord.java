package dev.airlock.egress;

import java.net.InetAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What one connection's {@link EgressRecord} will say, filled in by the stages as they decide. The
 * stages write it from the connection's own thread; a policy update reads the destination from
 * another, hence the volatile fields.
 */
final class ConnectionRecord {

    private final Instant startedAt = Instant.now();
    private final long started = System.nanoTime();
    private String protocol = "unknown";
    private volatile String destination;
    private volatile int port;
    private volatile InetAddress address;
    private String rule = "none";
    /** Passed the policy (and nothing refused since): something may go, or went, upstream. */
    private boolean allowed;
    /** Null, {@link EgressRecord#APPROVED} or {@link EgressRecord#DENIED}. */
    private String approval;
    /** Names of the credentials injected so far (never values). */
    private final Set<String> injected = new LinkedHashSet<>();
    final AtomicLong up = new AtomicLong();
    final AtomicLong down = new AtomicLong();

    long started() {
        return started;
    }

    void protocol(String name) {
        protocol = name;
    }

    void rejected(HandshakeOutcome.Rejected r) {
        protocol = r.protocol();
        destination = r.destination();
        port = r.port();
        rule = r.rule();
    }

    void asked(EgressRequest asked) {
        protocol = asked.protocol().recordName;
        destination = asked.destination();
        port = asked.port();
    }

    void admitted(Admission.Admitted admitted) {
        address = admitted.address();
        rule = admitted.rule();
        allowed = true;
    }

    /** A stage refused: nothing went upstream for this request. */
    void refused(EgressRefusal r) {
        refused(r.rule);
        if (r.address != null) {
            address = r.address;
        }
    }

    void refused(String rule) {
        allowed = false;
        this.rule = rule;
    }

    void rule(String rule) {
        this.rule = rule;
    }

    void approval(boolean approved) {
        approval = approved ? EgressRecord.APPROVED : EgressRecord.DENIED;
    }

    void injected(List<String> credentialNames) {
        injected.addAll(credentialNames);
    }

    String destination() {
        return destination;
    }

    int port() {
        return port;
    }

    InetAddress address() {
        return address;
    }

    /** @param cutBy why the connection was cut, or null; an allowed connection's record names it after the rule */
    EgressRecord toRecord(String sandboxId, String cutBy) {
        String recorded = cutBy != null && allowed ? rule + "; cut: " + cutBy : rule;
        return new EgressRecord(sandboxId, startedAt, protocol, destination, port, address == null ? null : address.getHostAddress(),
                allowed, recorded, up.get(), down.get(), Duration.ofNanos(System.nanoTime() - started), List.copyOf(injected), approval);
    }
}
