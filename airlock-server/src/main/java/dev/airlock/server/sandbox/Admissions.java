package dev.airlock.server.sandbox;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Language;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.control.Admission;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.live.Sandboxes;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.snapshot.SnapshotStore;

import java.time.Duration;
import java.util.List;

/**
 * What a command names, resolved before any control judges it: the sandbox (NOT_FOUND for one the
 * caller cannot see), its profile, a create's plan within the profile (a restore takes its
 * snapshot's profile and image), a network change's plan, and the language an execution runs.
 */
final class Admissions {

    private final ServerConfig config;
    private final Policy policy;
    private final Sandboxes sandboxes;
    private final SnapshotStore snapshots;

    Admissions(ServerConfig config, Policy policy, Sandboxes sandboxes, SnapshotStore snapshots) {
        this.config = config;
        this.policy = policy;
        this.sandboxes = sandboxes;
        this.snapshots = snapshots;
    }

    /** Resolves what {@code command} names before any control judges it (NOT_FOUND for a sandbox the caller cannot see). */
    Admission admission(Caller caller, Command<?> asked) {
        Command<?> command = asked;
        ManagedSandbox s = command.sandbox() == null ? null : sandboxes.get(caller, command);
        Profile profile = s == null ? null : s.profile();
        Admission.CreatePlan create = null;
        Admission.NetworkPlan network = null;
        Language language = null;
        switch (command) {
            case Command.Create c -> {
                Client client = caller.client();
                if (client == null) {
                    throw new AirlockException(Kind.INTERNAL, "the server does not create sandboxes on its own");
                }
                if (c.snapshot() != null) {
                    // a restore: the snapshot's profile and image, which the controls then judge as for any create
                    // another node's snapshot, on a node of a cluster: its files fetched here first (a mirror, which the create then reads)
                    Command.SnapshotView snap = snapshots.forRestore(c.snapshot(), client.name());
                    if ((c.profile() != null && !c.profile().equals(snap.profile())) || (c.image() != null && !c.image().equals(snap.image()))) {
                        throw AirlockException.invalid("a sandbox restored from snapshot " + snap.id() + " gets its profile '" + snap.profile()
                                + "' and image '" + snap.image() + "': leave out profile and image");
                    }
                    c = c.restoring(snap.profile(), snap.image());
                    command = c;
                }
                String chosen = c.profile() == null ? client.profiles().getFirst() : c.profile();
                profile = client.profiles().contains(chosen) ? policy.profile(chosen) : null;
                if (profile != null) {
                    create = plan(profile, c);
                }
            }
            case Command.UpdateNetwork n -> {
                NetworkPolicy narrowed = profile.keepingDeny(n.network());
                network = new Admission.NetworkPlan(narrowed, profile.beyondNetwork(narrowed));
            }
            case Command.Exec e -> language = language(s, e.source());
            case Command.StartProcess p -> language = language(s, p.source());
            case Command.CreateContext c -> language = c.language();
            case Command.RestartContext r -> language = Language.PYTHON;
            case Command.RunCell r -> language = Language.PYTHON;
            default -> {
            }
        }
        return new Admission(caller, command, s, profile, create, network, language, new Admission.Holds());
    }

    private Admission.CreatePlan plan(Profile p, Command.Create c) {
        Duration ttl = c.ttl() == null ? min(config.defaultTtl(), p.maxLifetime()) : c.ttl();
        Duration idle = c.idleTimeout() == null ? config.defaultIdle() : c.idleTimeout();
        NetworkPolicy network = c.network() == null ? p.network() : p.keepingDeny(c.network());
        List<String> beyond = c.network() == null ? List.of() : p.beyondNetwork(network);
        return new Admission.CreatePlan(c.limits().apply(p.limits()), ttl, idle, network, beyond);
    }

    static Language language(ManagedSandbox s, ExecSource source) {
        if (!(source instanceof ExecSource.Code code)) {
            return null;
        }
        Language language = code.language() != null ? code.language() : s.defaultLanguage();
        if (language == null) {
            throw AirlockException.invalid(ExecSource.missingLanguage());
        }
        return language;
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }
}
