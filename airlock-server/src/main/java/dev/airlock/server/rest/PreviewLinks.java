package dev.airlock.server.rest;

import dev.airlock.server.policy.Policy;

import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * Preview links (docs/security-model.md, "Preview ports"): capability URLs
 * {@code /preview/<token>/...} that reach one port of one sandbox as the client that made them,
 * with no other credential, so that a browser can load a preview's styles and scripts (a page
 * sandboxed by CSP has an opaque origin, and its requests carry no console cookie). A token is
 * {@value #TOKEN_BYTES} random bytes; only its SHA-256 is kept. A link lasts {@link #LIFETIME}, or
 * until its sandbox ends (every use is decided again as its client, whose sandbox it must still
 * be); a sandbox has at most {@value #PER_SANDBOX} live links (a new one ends the oldest).
 */
final class PreviewLinks {

    static final int TOKEN_BYTES = 32;
    static final int PER_SANDBOX = 8;
    static final Duration LIFETIME = Duration.ofHours(1);
    static final String PREFIX = "/preview/";
    private static final Pattern TOKEN = Pattern.compile("prv_[A-Za-z0-9_-]{43}");

    /** What one token reaches, and until when. */
    record Link(String client, String sandbox, int port, Instant created, Instant expiresAt) {
    }

    /** A new link: its URL (which holds the token) and what it reaches. */
    record Created(String url, Link link) {
    }

    private final Clock clock;
    private final SecureRandom random = new SecureRandom();
    private final Map<String, Link> byHash = new HashMap<>();

    PreviewLinks(Clock clock) {
        this.clock = clock;
    }

    /**
     * A new link for {@code client} to {@code port} of {@code sandbox}. Links of sandboxes that are
     * no longer {@code live} and expired ones are dropped first; the sandbox's oldest goes when it
     * has {@value #PER_SANDBOX}.
     */
    synchronized Created create(String client, String sandbox, int port, Predicate<String> live) {
        Instant now = clock.instant();
        byHash.values().removeIf(l -> !l.expiresAt().isAfter(now) || !live.test(l.sandbox()));
        List<Map.Entry<String, Link>> mine = new ArrayList<>(byHash.entrySet().stream().filter(e -> e.getValue().sandbox().equals(sandbox)).toList());
        mine.sort(Comparator.comparing(e -> e.getValue().created()));
        for (int i = 0; i <= mine.size() - PER_SANDBOX; i++) {
            byHash.remove(mine.get(i).getKey());
        }
        byte[] raw = new byte[TOKEN_BYTES];
        random.nextBytes(raw);
        String token = "prv_" + Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
        Link link = new Link(client, sandbox, port, now, now.plus(LIFETIME));
        byHash.put(hash(token), link);
        return new Created(PREFIX + token + "/", link);
    }

    /** What {@code token} reaches, or null: unknown, malformed or expired. */
    synchronized Link find(String token) {
        if (token == null || !TOKEN.matcher(token).matches()) {
            return null;
        }
        String h = hash(token);
        Link l = byHash.get(h);
        if (l != null && !l.expiresAt().isAfter(clock.instant())) {
            byHash.remove(h);
            return null;
        }
        return l;
    }

    /** Links kept now (tests watch the bound). */
    synchronized int size() {
        return byHash.size();
    }

    private static String hash(String token) {
        return HexFormat.of().formatHex(Policy.sha256(token));
    }
}
