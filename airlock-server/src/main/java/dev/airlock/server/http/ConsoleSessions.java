package dev.airlock.server.http;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;

/**
 * The web console's sign-in sessions: a client token, checked once at sign-in, becomes a random
 * 256-bit session id held in an HttpOnly, SameSite=Strict cookie. The server keeps only the id's
 * SHA-256 with the client's name, a per-session CSRF token and two clocks. Bounded: at most
 * {@link #MAX_SESSIONS} sessions in all (a sign-in beyond that is refused) and
 * {@link #MAX_PER_CLIENT} per client (its least recently used one is ended); a session ends after
 * {@link #IDLE} unused or {@link #ABSOLUTE} after sign-in, whichever comes first. Sessions live in
 * memory: a restart signs everyone out.
 */
public final class ConsoleSessions {

    static final String COOKIE = "airlock_session";
    /** The header the console's scripts send the session's CSRF token in, on every state-changing request. */
    /** Where the console signs in and out. */
    public static final String PATH = "/console/session";
    /** The REST API called by the web console with its session cookie instead of a bearer token: its interface in audit records. */
    public static final String VIA = "console";
    public static final String CSRF_HEADER = "X-Airlock-CSRF";
    /**
     * The cookie that holds a sign-in token: the console's page reads the token from the answer to
     * its first {@code GET /console/session} and sends it back in {@link #CSRF_HEADER} with the
     * sign-in. A page of another origin can neither read that answer nor set that header, so it
     * cannot sign a browser into its own client (login CSRF). Nothing of it is kept on the server.
     */
    static final String SIGN_IN_COOKIE = "airlock_signin";
    static final int MAX_SESSIONS = 1000;
    static final int MAX_PER_CLIENT = 20;
    public static final Duration IDLE = Duration.ofMinutes(30);
    public static final Duration ABSOLUTE = Duration.ofHours(12);

    /** One signed-in browser; {@code lastUsed} moves on every request. */
    public static final class Session {
        public final String client;
        public final String csrf;
        public final Instant created;
        private Instant lastUsed;

        private Session(String client, String csrf, Instant created) {
            this.client = client;
            this.csrf = csrf;
            this.created = created;
            this.lastUsed = created;
        }

        /** Whether {@code offered} is this session's CSRF token (compared in constant time). */
        public boolean csrfMatches(String offered) {
            return offered != null && MessageDigest.isEqual(offered.getBytes(StandardCharsets.UTF_8), csrf.getBytes(StandardCharsets.UTF_8));
        }
    }

    /** A new session: the cookie's value (given to the browser only) and the session. */
    public record Opened(String id, Session session) {
    }

    private final Map<String, Session> byIdHash = new HashMap<>();
    private final SecureRandom random = new SecureRandom();
    private final Clock clock;

    public ConsoleSessions(Clock clock) {
        this.clock = clock;
    }

    /** Signs {@code client} in; LIMIT_EXCEEDED when the server holds {@link #MAX_SESSIONS}. */
    public synchronized Opened open(String client) {
        Instant now = clock.instant();
        prune(now);
        var own = byIdHash.entrySet().stream().filter(e -> e.getValue().client.equals(client)).toList();
        if (own.size() >= MAX_PER_CLIENT) {
            byIdHash.remove(own.stream().min(Comparator.comparing(e -> e.getValue().lastUsed)).orElseThrow().getKey());
        }
        if (byIdHash.size() >= MAX_SESSIONS) {
            throw new AirlockException(Kind.LIMIT_EXCEEDED, "the server holds " + MAX_SESSIONS + " console sessions (its bound):"
                    + " sign out elsewhere, or wait for idle sessions to expire (" + IDLE.toMinutes() + " min)");
        }
        String id = token();
        Session s = new Session(client, token(), now);
        byIdHash.put(hash(id), s);
        return new Opened(id, s);
    }

    /** The live session a cookie value names, marked used now; null when unknown or expired. */
    public synchronized Session lookup(String id) {
        if (id == null) {
            return null;
        }
        Instant now = clock.instant();
        String key = hash(id);
        Session s = byIdHash.get(key);
        if (s == null) {
            return null;
        }
        if (expired(s, now)) {
            byIdHash.remove(key);
            return null;
        }
        s.lastUsed = now;
        return s;
    }

    public synchronized void close(String id) {
        if (id != null) {
            byIdHash.remove(hash(id));
        }
    }

    synchronized int size() {
        return byIdHash.size();
    }

    /** The session cookie's value in {@code req}, or null. */
    public static String cookie(HttpServletRequest req) {
        return cookie(req, COOKIE);
    }

    private static String cookie(HttpServletRequest req, String name) {
        Cookie[] cookies = req.getCookies();
        if (cookies != null) {
            for (Cookie c : cookies) {
                if (name.equals(c.getName())) {
                    return c.getValue();
                }
            }
        }
        return null;
    }

    /** A new sign-in token, for {@link #SIGN_IN_COOKIE} and the page. */
    public String signInToken() {
        return token();
    }

    /** The Set-Cookie value that gives the browser the sign-in token {@code token}, for an hour, for the sign-in path only. */
    public static String setSignInCookie(String token, boolean secure) {
        return SIGN_IN_COOKIE + "=" + token + "; Path=" + PATH + "; HttpOnly; SameSite=Strict; Max-Age=3600" + (secure ? "; Secure" : "");
    }

    /** Whether {@code req} carries a sign-in token in its cookie and the same in {@link #CSRF_HEADER}. */
    public static boolean signInTokenMatches(HttpServletRequest req) {
        String offered = req.getHeader(CSRF_HEADER);
        String token = cookie(req, SIGN_IN_COOKIE);
        return offered != null && !offered.isEmpty() && token != null
                && MessageDigest.isEqual(offered.getBytes(StandardCharsets.UTF_8), token.getBytes(StandardCharsets.UTF_8));
    }

    /** The Set-Cookie value that gives the browser {@code id}; null clears it. {@code secure}: over HTTPS only (the port serves TLS). */
    public static String setCookie(String id, boolean secure) {
        return COOKIE + "=" + (id == null ? "" : id) + "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + (id == null ? 0 : ABSOLUTE.toSeconds())
                + (secure ? "; Secure" : "");
    }

    private boolean expired(Session s, Instant now) {
        return now.isAfter(s.lastUsed.plus(IDLE)) || now.isAfter(s.created.plus(ABSOLUTE));
    }

    private void prune(Instant now) {
        byIdHash.values().removeIf(s -> expired(s, now));
    }

    private String token() {
        byte[] b = new byte[32];
        random.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    private static String hash(String id) {
        return HexFormat.of().formatHex(dev.airlock.server.policy.Policy.sha256(id));
    }
}
