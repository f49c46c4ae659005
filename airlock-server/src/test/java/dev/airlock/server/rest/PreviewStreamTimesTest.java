package dev.airlock.server.rest;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The preview proxy's watchdog rule (docs/security-model.md, "Preview ports"), at chosen instants:
 * a stream is ended when the sandbox's server does not start answering, when it goes quiet, and
 * (issue 29) when it has lived its lifetime even though it is never quiet: a server that answers a
 * byte a minute would otherwise hold a stream, and its client's slots, for as long as it likes.
 */
class PreviewStreamTimesTest {

    private static long after(PreviewStream s, Duration d) {
        return s.started + d.toNanos();
    }

    @Test
    void aServerThatAnswersAByteAMinuteIsEndedAtTheLifetime() {
        PreviewStream s = new PreviewStream("al-a", "client");
        s.answered = true;
        for (Duration age = Duration.ZERO; age.compareTo(PortProxy.LIFETIME) < 0; age = age.plusMinutes(1)) {
            s.lastActivity = after(s, age); // a byte a minute: never idle
            assertThat(PortProxy.overdue(s, after(s, age.plusSeconds(30)))).as("at %s", age.plusSeconds(30)).isFalse();
        }
        s.lastActivity = after(s, PortProxy.LIFETIME);
        assertThat(PortProxy.overdue(s, after(s, PortProxy.LIFETIME.plusSeconds(1)))).as("past its lifetime, a byte a second ago").isTrue();
    }

    @Test
    void aServerThatNeverStartsAnsweringIsEndedAfterTheFirstByteWait() {
        PreviewStream s = new PreviewStream("al-a", "client");
        assertThat(PortProxy.overdue(s, after(s, PortProxy.FIRST_BYTE.minusSeconds(1)))).isFalse();
        assertThat(PortProxy.overdue(s, after(s, PortProxy.FIRST_BYTE.plusSeconds(1)))).isTrue();
        s.answered = true; // once it answered, only idleness and the lifetime end it
        assertThat(PortProxy.overdue(s, after(s, PortProxy.FIRST_BYTE.plusSeconds(1)))).isFalse();
    }

    @Test
    void aQuietStreamIsEndedAfterTheIdleTime() {
        PreviewStream s = new PreviewStream("al-a", "client");
        s.answered = true;
        s.lastActivity = after(s, Duration.ofMinutes(10));
        assertThat(PortProxy.overdue(s, after(s, Duration.ofMinutes(10).plus(PortProxy.IDLE).minusSeconds(1)))).isFalse();
        assertThat(PortProxy.overdue(s, after(s, Duration.ofMinutes(10).plus(PortProxy.IDLE).plusSeconds(1)))).isTrue();
    }
}
