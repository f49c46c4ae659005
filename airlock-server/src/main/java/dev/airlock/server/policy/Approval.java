package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;

import java.time.Instant;
import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * An action that waits for a person, and how it ended.
 *
 * @param rule      the policy rule that asked for it, such as {@code profiles.big.approvals}
 * @param summary   what is asked, in a sentence a person can decide on
 * @param decidedBy who answered ({@code rest:<client>}, {@code cli}, {@code mcp-elicitation:<client>}), or
 *                  {@code timeout}
 */
public record Approval(String id, String client, Trigger trigger, String rule, String sandbox, String summary,
                       Instant requestedAt, Instant deadline, State state, String decidedBy, Instant decidedAt, String reason) {

    /** The actions a profile may mark as needing approval. */
    public enum Trigger {
        /** Creating any sandbox with the profile (for example one with larger limits). */
        CREATE("create"),
        /** A network destination beyond the profile's, at create or by a later update. */
        NETWORK("network"),
        /** Every execution in a sandbox of the profile. */
        EXEC("exec"),
        /** An egress request one of the profile's {@code approveRequests} rules covers (set by those rules, not listed). */
        REQUEST("request");

        private final String id;

        Trigger(String id) {
            this.id = id;
        }

        public String id() {
            return id;
        }

        public static Trigger parse(String id) {
            for (Trigger t : values()) {
                if (t.id.equals(id)) {
                    return t;
                }
            }
            throw AirlockException.invalid("unknown approval trigger '" + id + "': choose from "
                    + Arrays.stream(values()).map(Trigger::id).collect(Collectors.joining(", ")));
        }
    }

    public enum State { PENDING, APPROVED, DENIED, TIMED_OUT }

    public Approval decided(State s, String by, String why) {
        return new Approval(id, client, trigger, rule, sandbox, summary, requestedAt, deadline, s, by, Instant.now(), why);
    }
}
