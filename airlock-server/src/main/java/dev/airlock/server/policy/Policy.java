package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.SandboxSpec;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Who may do what: the server's clients, the profiles they may create sandboxes with, the secrets
 * those profiles may use, and how long an approval waits. Loaded from a YAML file
 * ({@link PolicyFile}, docs/policy.md) or built in.
 *
 * @param source      where it came from, for messages: a file path or {@code built-in}
 * @param elicitation whether an MCP client that supports elicitation is asked to approve its own
 *                    agent's actions (its user answers); false leaves approvals to operators
 * @param e2bTemplates E2B template name to profile, for the E2B door (docs/e2b.md); a template not
 *                    named here is {@code base} or {@code code-interpreter-v1} (the client's first
 *                    profile) or a profile's own name
 */
public record Policy(String source, Map<String, Profile> profiles, Map<String, Client> clients, Map<String, SecretSource> secrets,
                     Duration approvalTimeout, boolean elicitation, Map<String, String> e2bTemplates) {

    public static final String LOCAL_CLIENT = "local";
    public static final String DEFAULT_PROFILE = "default";
    public static final Duration DEFAULT_APPROVAL_TIMEOUT = Duration.ofMinutes(5);
    public static final long DEFAULT_OUTPUT_BYTES = 16L << 20;

    private static final long MIB = 1L << 20, GIB = 1L << 30;
    /** The most a sandbox of the built-in profile may ask for. */
    static final Limits BUILT_IN_MAX = new Limits(8 * GIB, 4096, 4.0, Duration.ofHours(1), 64 * MIB, 1 * GIB, 65536, 4 * GIB);

    public Policy {
        profiles = Map.copyOf(profiles);
        clients = Map.copyOf(clients);
        secrets = Map.copyOf(secrets);
        e2bTemplates = Map.copyOf(e2bTemplates);
    }

    /**
     * The policy of a server started without a policy file: one client, {@code local}, holding the
     * token in the data directory, with every operation and one locked-down profile (no network,
     * no inputs, no credentials, no approvals).
     */
    public static Policy builtIn(String localToken) {
        Profile profile = new Profile(DEFAULT_PROFILE, SandboxSpec.SYSTEM_IMAGE, EnumSet.allOf(Language.class), Limits.DEFAULTS,
                BUILT_IN_MAX, NetworkPolicy.NONE, List.of(), List.of(), Duration.ofHours(24), Set.of(), List.of(), DEFAULT_OUTPUT_BYTES, null);
        Client local = new Client(LOCAL_CLIENT, sha256(localToken), List.of(DEFAULT_PROFILE), EnumSet.allOf(Operation.class), 0, 0);
        return new Policy("built-in", Map.of(DEFAULT_PROFILE, profile), Map.of(LOCAL_CLIENT, local), Map.of(), DEFAULT_APPROVAL_TIMEOUT, true,
                Map.of());
    }

    /** The client whose token an {@code Authorization: Bearer} header value carries. */
    public Optional<Client> authenticate(String authorization) {
        if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return Optional.empty();
        }
        byte[] offered = sha256(authorization.substring(7).trim());
        Client found = null;
        // compare with every client, so the time taken says nothing about which one matched
        for (Client c : clients.values()) {
            if (MessageDigest.isEqual(offered, c.tokenSha256())) {
                found = c;
            }
        }
        return Optional.ofNullable(found);
    }

    public Client client(String name) {
        Client c = clients.get(name);
        if (c == null) {
            throw AirlockException.invalid("the policy (" + source + ") has no client '" + name + "': it has " + String.join(", ", clients.keySet()));
        }
        return c;
    }

    public Profile profile(String name) {
        Profile p = profiles.get(name);
        if (p == null) {
            throw AirlockException.invalid("the policy (" + source + ") has no profile '" + name + "'");
        }
        return p;
    }

    public static byte[] sha256(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
