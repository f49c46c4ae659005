package dev.airlock.server.control;

import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Language;
import dev.airlock.core.Printable;
import dev.airlock.server.command.Command;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Profile;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * What a profile allows: which profiles a client may use, the image, limits up to
 * {@code maxLimits}, lifetimes up to {@code maxLifetimeSeconds}, the languages, execution
 * timeouts, and network no wider than the profile's (unless the profile sends wider network to a
 * person, which {@link ApprovalGate} then asks). Each refusal names the profile's rule.
 */
public final class ProfileCeilings implements Control {

    @Override
    public String name() {
        return "profile";
    }

    @Override
    public void check(Admission a) {
        switch (a.command()) {
            case Command.Create c -> create(a, c);
            case Command.Exec e -> execution(a.profile(), a.language(), e.options().timeout());
            case Command.StartProcess s -> background(a.profile(), a.language(), s.options().timeout());
            case Command.CreateContext c -> execution(a.profile(), a.language(), null);
            case Command.RestartContext r -> execution(a.profile(), a.language(), null);
            case Command.RunCell r -> execution(a.profile(), a.language(), r.timeout());
            case Command.ExtendTtl e -> lifetime(a, e.ttl());
            case Command.UpdateNetwork n -> network(a.profile(), a.network().beyondProfile());
            default -> {
            }
        }
    }

    private void create(Admission a, Command.Create c) {
        Client client = a.caller().client();
        Profile p = a.profile();
        if (p == null) {
            String chosen = c.profile() == null ? client.profiles().getFirst() : c.profile();
            throw refuse(Kind.PERMISSION_DENIED, client.rule("profiles"), "client '" + client.name() + "' may not use profile '"
                    + Printable.of(chosen) + "' (rule " + client.rule("profiles") + "): it may use " + String.join(", ", client.profiles()));
        }
        if (c.image() != null && !p.images().contains(c.image())) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("images"), "image '" + Printable.of(c.image()) + "' is not among profile '"
                    + p.name() + "''s images " + p.images() + " (rule " + p.rule("images") + ")");
        }
        List<String> over = p.exceeding(a.create().limits());
        if (!over.isEmpty()) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLimits"), "limits above what profile '" + p.name() + "' allows: "
                    + String.join(", ", over) + " (rule " + p.rule("maxLimits") + "): ask for less, or use a profile with more");
        }
        Duration ttl = a.create().ttl();
        if (ttl.compareTo(p.maxLifetime()) > 0) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLifetimeSeconds"), "a lifetime of " + ttl.toSeconds() + " s is above profile '"
                    + p.name() + "''s " + p.maxLifetime().toSeconds() + " s (rule " + p.rule("maxLifetimeSeconds") + ")");
        }
        if (c.defaultLanguage() != null) {
            language(p, c.defaultLanguage());
        }
        network(p, a.create().beyondProfile());
    }

    private void execution(Profile p, Language language, Duration timeout) {
        if (timeout != null && timeout.compareTo(p.maxLimits().timeout()) > 0) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLimits.timeoutSeconds"), "a timeout of " + timeout.toSeconds()
                    + " s is above profile '" + p.name() + "''s " + p.maxLimits().timeout().toSeconds() + " s (rule "
                    + p.rule("maxLimits.timeoutSeconds") + ")");
        }
        if (language != null) {
            language(p, language);
        }
    }

    /**
     * A background process (a server, a terminal) is long-lived work: it may live as long as its
     * sandbox, so its ceiling is the profile's lifetime, not the timeout meant for one execution.
     */
    private void background(Profile p, Language language, Duration timeout) {
        if (timeout != null && timeout.compareTo(p.maxLifetime()) > 0) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLifetimeSeconds"), "a background process's timeout of " + timeout.toSeconds()
                    + " s is above profile '" + p.name() + "''s " + p.maxLifetime().toSeconds() + " s, the longest its sandbox may live"
                    + " (rule " + p.rule("maxLifetimeSeconds") + ")");
        }
        if (language != null) {
            language(p, language);
        }
    }

    private void language(Profile p, Language language) {
        if (!p.languages().contains(language)) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("languages"), "language " + language.id() + " is not allowed by profile '" + p.name()
                    + "' (rule " + p.rule("languages") + "): it allows " + p.languages().stream().map(Language::id).sorted().toList());
        }
    }

    private void lifetime(Admission a, Duration ttl) {
        Profile p = a.profile();
        Duration lifetime = Duration.between(a.sandbox().createdAt(), Instant.now().plus(ttl));
        if (lifetime.compareTo(p.maxLifetime()) > 0) {
            throw refuse(Kind.PERMISSION_DENIED, p.rule("maxLifetimeSeconds"), "sandbox " + a.sandboxId() + " would live "
                    + lifetime.toSeconds() + " s in all, above profile '" + p.name() + "''s " + p.maxLifetime().toSeconds()
                    + " s (rule " + p.rule("maxLifetimeSeconds") + ")");
        }
    }

    /** Network beyond the profile's: refused here unless the profile sends it to a person. */
    private void network(Profile p, List<String> beyond) {
        if (beyond.isEmpty() || p.approvals().contains(Approval.Trigger.NETWORK)) {
            return;
        }
        throw refuse(Kind.PERMISSION_DENIED, p.rule("network"), (p.network().isNone() ? "profile '" + p.name() + "' has no network, and"
                + " this asks for " : "network beyond what profile '" + p.name() + "' allows: ")
                + String.join("; ", beyond) + " (rule " + p.rule("network") + "): " + (p.network().isNone()
                ? "create the sandbox with a profile that has network (see docs/policy.md)" : "ask only for what the profile names"));
    }
}
