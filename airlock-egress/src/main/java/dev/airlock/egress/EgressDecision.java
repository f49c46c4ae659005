package dev.airlock.egress;

import java.net.InetAddress;

/** The outcome of checking one destination: where to connect, or why not. Always names its rule. */
public sealed interface EgressDecision {

    /** The rule that made the decision, as shown to the sandbox and in the record. */
    String rule();

    boolean allowed();

    /** Connect to exactly {@code address}: the proxy never resolves the name again. */
    record Allowed(InetAddress address, String rule) implements EgressDecision {
        @Override
        public boolean allowed() {
            return true;
        }
    }

    /** Refused; {@code reason} says what to change in the policy. */
    record Denied(String rule, String reason) implements EgressDecision {
        @Override
        public boolean allowed() {
            return false;
        }
    }
}
