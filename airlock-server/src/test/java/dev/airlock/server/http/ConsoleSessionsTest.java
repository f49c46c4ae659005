package dev.airlock.server.http;

import dev.airlock.core.AirlockException;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The console's sessions: random ids, CSRF tokens, the idle and absolute expiry, and the bounds. */
class ConsoleSessionsTest {

    /** A clock the test moves. */
    private static final class Hands extends Clock {
        Instant now = Instant.parse("2026-12-01T12:00:00Z");

        @Override
        public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    @Test
    void aSessionIsFoundByItsIdOnlyAndCarriesItsOwnCsrfToken() {
        ConsoleSessions sessions = new ConsoleSessions(new Hands());
        ConsoleSessions.Opened a = sessions.open("alice");
        ConsoleSessions.Opened b = sessions.open("alice");
        assertThat(a.id()).hasSize(43).isNotEqualTo(b.id()); // 256 bits, base64url
        assertThat(a.session().csrf).isNotEqualTo(b.session().csrf).isNotEqualTo(a.id());
        assertThat(sessions.lookup(a.id()).client).isEqualTo("alice");
        assertThat(sessions.lookup(a.id() + "x")).isNull();
        assertThat(sessions.lookup(null)).isNull();
        assertThat(a.session().csrfMatches(a.session().csrf)).isTrue();
        assertThat(a.session().csrfMatches(b.session().csrf)).isFalse();
        assertThat(a.session().csrfMatches(null)).isFalse();
        sessions.close(a.id());
        assertThat(sessions.lookup(a.id())).isNull();
        assertThat(sessions.lookup(b.id())).isNotNull();
    }

    @Test
    void aSessionEndsWhenIdleAndAfterItsAbsoluteLifetimeHoweverUsed() {
        Hands clock = new Hands();
        ConsoleSessions sessions = new ConsoleSessions(clock);
        String idle = sessions.open("alice").id();
        String busy = sessions.open("alice").id();
        clock.now = clock.now.plus(ConsoleSessions.IDLE.minusSeconds(1));
        assertThat(sessions.lookup(busy)).isNotNull();
        clock.now = clock.now.plusSeconds(2);
        assertThat(sessions.lookup(idle)).as("unused for longer than the idle timeout").isNull();
        // used every 20 minutes, it still ends 12 hours after sign-in
        Instant end = clock.now.minus(ConsoleSessions.IDLE).plusSeconds(1).plus(ConsoleSessions.ABSOLUTE);
        while (clock.now.plus(Duration.ofMinutes(20)).isBefore(end)) {
            clock.now = clock.now.plus(Duration.ofMinutes(20));
            assertThat(sessions.lookup(busy)).isNotNull();
        }
        clock.now = end.plusSeconds(1);
        assertThat(sessions.lookup(busy)).as("past the absolute lifetime").isNull();
    }

    @Test
    void perClientTheLeastRecentlyUsedSessionGivesWayAndTheTotalIsBounded() {
        Hands clock = new Hands();
        ConsoleSessions sessions = new ConsoleSessions(clock);
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < ConsoleSessions.MAX_PER_CLIENT; i++) {
            ids.add(sessions.open("alice").id());
            clock.now = clock.now.plusSeconds(1);
        }
        sessions.lookup(ids.getFirst()); // the oldest is used again: the second is now the least recently used
        clock.now = clock.now.plusSeconds(1);
        sessions.open("alice");
        assertThat(sessions.lookup(ids.getFirst())).isNotNull();
        assertThat(sessions.lookup(ids.get(1))).isNull();
        assertThat(sessions.size()).isEqualTo(ConsoleSessions.MAX_PER_CLIENT);

        Set<String> clients = new HashSet<>();
        for (int i = 0; sessions.size() < ConsoleSessions.MAX_SESSIONS; i++) {
            clients.add("c" + (i / ConsoleSessions.MAX_PER_CLIENT));
            sessions.open("c" + (i / ConsoleSessions.MAX_PER_CLIENT));
        }
        assertThatThrownBy(() -> sessions.open("newcomer")).isInstanceOf(AirlockException.class)
                .hasMessageContaining(ConsoleSessions.MAX_SESSIONS + " console sessions");
        // expired sessions make room again
        clock.now = clock.now.plus(ConsoleSessions.IDLE).plusSeconds(1);
        assertThat(sessions.open("newcomer").id()).isNotNull();
        assertThat(sessions.size()).isEqualTo(1);
    }

    @Test
    void theCookieIsHttpOnlyStrictAndScopedToTheServer() {
        assertThat(ConsoleSessions.setCookie("abc", false)).contains("airlock_session=abc", "HttpOnly", "SameSite=Strict", "Path=/")
                .doesNotContain("Secure");
        assertThat(ConsoleSessions.setCookie(null, false)).contains("airlock_session=;", "Max-Age=0");
        // over HTTPS (serve --tls-cert) the browser sends it back over HTTPS only
        assertThat(ConsoleSessions.setCookie("abc", true)).endsWith("; Secure");
        assertThat(ConsoleSessions.setSignInCookie("t", true)).endsWith("; Secure");
    }
}
