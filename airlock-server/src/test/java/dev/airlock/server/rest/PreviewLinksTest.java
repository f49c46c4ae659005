package dev.airlock.server.rest;

import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** Preview links: a capability per client, sandbox and port, 8 per sandbox, an hour, gone with the sandbox. */
class PreviewLinksTest {

    /** A clock the test moves. */
    private static final class Moving extends Clock {
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

    private static String token(PreviewLinks.Created c) {
        String url = c.url();
        return url.substring(PreviewLinks.PREFIX.length(), url.length() - 1);
    }

    @Test
    void aLinkReachesItsPortUntilItExpires() {
        Moving clock = new Moving();
        PreviewLinks links = new PreviewLinks(clock);
        PreviewLinks.Created made = links.create("agent", "al-1", 8000, id -> true);
        assertThat(made.url()).matches("/preview/prv_[A-Za-z0-9_-]{43}/");
        PreviewLinks.Link found = links.find(token(made));
        assertThat(found).isNotNull();
        assertThat(found.client()).isEqualTo("agent");
        assertThat(found.sandbox()).isEqualTo("al-1");
        assertThat(found.port()).isEqualTo(8000);
        assertThat(found.expiresAt()).isEqualTo(clock.now.plus(Duration.ofHours(1)));

        assertThat(links.find("prv_" + "A".repeat(43))).as("an unknown token").isNull();
        assertThat(links.find("../../etc")).as("not a token").isNull();
        assertThat(links.find(null)).isNull();

        clock.now = clock.now.plus(Duration.ofMinutes(59));
        assertThat(links.find(token(made))).isNotNull();
        clock.now = clock.now.plus(Duration.ofMinutes(1));
        assertThat(links.find(token(made))).as("after an hour").isNull();
        assertThat(links.size()).isZero();
    }

    @Test
    void aSandboxKeepsItsEightNewestLinksAndEndedSandboxesLoseTheirs() {
        Moving clock = new Moving();
        PreviewLinks links = new PreviewLinks(clock);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            tokens.add(token(links.create("agent", "al-1", 8000, id -> true)));
            clock.now = clock.now.plusSeconds(1);
        }
        assertThat(links.find(tokens.get(0))).as("the oldest ended").isNull();
        assertThat(links.find(tokens.get(1))).isNull();
        for (String t : tokens.subList(2, 10)) {
            assertThat(links.find(t)).isNotNull();
        }
        assertThat(Set.copyOf(tokens)).as("each token is new").hasSize(10);

        // another sandbox's link: the first sandbox ended, its links are dropped
        String other = token(links.create("agent", "al-2", 3000, id -> id.equals("al-2")));
        assertThat(links.size()).isEqualTo(1);
        assertThat(links.find(other)).isNotNull();
        assertThat(links.find(tokens.get(9))).isNull();
    }
}
