package dev.airlock.server.control;

import dev.airlock.core.Language;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.server.command.Command;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Operation;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.PolicyFile;
import dev.airlock.server.policy.Profile;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;

import java.time.Duration;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Callers, clients and admissions for the control tests, resolved the way
 * {@code SandboxService.admission} resolves them, so a control is judged alone, with no service,
 * no server and no sandbox.
 */
final class Fixtures {

    /** The server's default time-to-live, as {@code SandboxService.plan} applies it when a create names none. */
    static final Duration DEFAULT_TTL = Duration.ofMinutes(30);
    static final Duration DEFAULT_IDLE = Duration.ofMinutes(10);
    static final String TOKEN_HASH = HexFormat.of().formatHex(Policy.sha256("alk_test-token-0123456789abcdef0123456789"));

    private Fixtures() {
    }

    /** The built-in policy's one profile, {@code default}: no network, no approvals. */
    static Profile builtInProfile() {
        return Policy.builtIn("test-token").profile(Policy.DEFAULT_PROFILE);
    }

    /** A policy from YAML; {@code %s} in it stands for a token hash. */
    static Policy policy(String yaml) {
        return PolicyFile.parse("policy.yaml", yaml.replace("%s", TOKEN_HASH), null);
    }

    /** {@code profile} with {@code approvals} as the actions that wait for a person. */
    static Profile withApprovals(Profile p, Set<Approval.Trigger> approvals) {
        return new Profile(p.name(), p.image(), p.languages(), p.limits(), p.maxLimits(), p.network(), p.inputs(), p.credentials(),
                p.maxLifetime(), approvals, p.requestApprovals(), p.outputBytes(), p.isolation());
    }

    /** {@code profile} renamed, with {@code network} as its network. */
    static Profile withNetwork(Profile p, String name, NetworkPolicy network) {
        return new Profile(name, p.image(), p.languages(), p.limits(), p.maxLimits(), network, p.inputs(), p.credentials(),
                p.maxLifetime(), p.approvals(), p.requestApprovals(), p.outputBytes(), p.isolation());
    }

    static Client client(String name, int maxSandboxes, int executionsPerMinute) {
        return new Client(name, Policy.sha256("token-of-" + name), List.of(Policy.DEFAULT_PROFILE), EnumSet.allOf(Operation.class),
                maxSandboxes, executionsPerMinute);
    }

    static Client client(String name) {
        return client(name, 0, 0);
    }

    /** {@code client} calling over REST, granted the operation of {@code command}. */
    static Caller caller(Client client, Command<?> command) {
        return new Caller(client, "rest", command.operation(), null);
    }

    /** A command that names no sandbox (or whose sandbox the control does not read). */
    static Admission admission(Caller caller, Command<?> command) {
        return new Admission(caller, command, null, null, null, null, null, new Admission.Holds());
    }

    /** A create, planned as {@code SandboxService.plan} plans it; {@code profile} null: the client may not use the one asked for. */
    static Admission create(Caller caller, Profile profile, Command.Create c) {
        Admission.CreatePlan plan = null;
        if (profile != null) {
            Duration ttl = c.ttl() == null ? min(DEFAULT_TTL, profile.maxLifetime()) : c.ttl();
            Duration idle = c.idleTimeout() == null ? DEFAULT_IDLE : c.idleTimeout();
            NetworkPolicy network = c.network() == null ? profile.network() : profile.keepingDeny(c.network());
            List<String> beyond = c.network() == null ? List.of() : profile.beyondNetwork(network);
            plan = new Admission.CreatePlan(c.limits().apply(profile.limits()), ttl, idle, network, beyond);
        }
        return new Admission(caller, c, null, profile, plan, null, null, new Admission.Holds());
    }

    /** A create of the client's first profile with nothing asked beyond it. */
    static Command.Create plainCreate() {
        return new Command.Create(null, null, null, null, null, null, null, null, null);
    }

    /** A command on {@code sandbox}; {@code language} is the one code runs in (null for a command or no code). */
    static Admission onSandbox(Caller caller, Command<?> command, ManagedSandbox sandbox, Language language) {
        return new Admission(caller, command, sandbox, sandbox.profile(), null, null, language, new Admission.Holds());
    }

    /** A network change of {@code sandbox}, narrowed and compared with its profile as {@code SandboxService} does. */
    static Admission updateNetwork(Caller caller, Command.UpdateNetwork n, ManagedSandbox sandbox) {
        Profile p = sandbox.profile();
        NetworkPolicy narrowed = p.keepingDeny(n.network());
        return new Admission(caller, n, sandbox, p, null, new Admission.NetworkPlan(narrowed, p.beyondNetwork(narrowed)), null,
                new Admission.Holds());
    }

    /** The refusal {@code check} throws; fails when it throws none, or something else. */
    static Refusal refusal(ThrowingCallable check) {
        try {
            check.call();
        } catch (Refused r) {
            assertThat(r.kind()).as("the exception's kind is its refusal's").isEqualTo(r.refusal().kind());
            assertThat(r.getMessage()).isEqualTo(r.refusal().message());
            return r.refusal();
        } catch (Throwable t) {
            throw new AssertionError("expected a refusal, got " + t, t);
        }
        return fail("expected a refusal, but the command was let through");
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }
}
