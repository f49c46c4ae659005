package dev.airlock.server.live;

import dev.airlock.server.command.MetricsSeries;

import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/** The console's chart data: a bounded ring of readings, turned into per-interval numbers. */
class MetricsHistoryTest {

    private final AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-12-01T20:00:00Z"));
    private final AtomicLong executions = new AtomicLong();
    private final Clock clock = new Clock() {
        @Override
        public ZoneOffset getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now.get();
        }
    };

    private MetricsHistory history() {
        return new MetricsHistory(() -> new MetricsHistory.Reading(3, executions.get(), executions.get() / 2, executions.get() * 100), clock, false);
    }

    private void tenSecondsLater(long moreExecutions) {
        now.set(now.get().plusSeconds(10));
        executions.addAndGet(moreExecutions);
    }

    @Test
    void countersBecomeWhatHappenedInEachInterval() {
        MetricsHistory h = history();
        h.sample();
        tenSecondsLater(4);
        h.sample();
        tenSecondsLater(2);
        MetricsSeries s = h.series();
        assertThat(s.time()).hasSize(3).containsExactly(1796155200L, 1796155210L, 1796155220L);
        assertThat(s.sandboxes()).containsExactly(3, 3, 3);
        assertThat(s.executionsPerMinute()).containsExactly(0.0, 24.0, 12.0);
        assertThat(s.refusals()).containsExactly(0, 2, 1);
        assertThat(s.egressBytes()).containsExactly(0, 400, 200);
    }

    @Test
    void theRingKeepsTheLastHourAndNoMore() {
        MetricsHistory h = history();
        for (int i = 0; i < MetricsHistory.SAMPLES + 50; i++) {
            h.sample();
            tenSecondsLater(1);
        }
        MetricsSeries s = h.series();
        assertThat(s.time()).hasSize(MetricsHistory.SAMPLES + 1);
        assertThat(s.time()[MetricsHistory.SAMPLES] - s.time()[0]).isEqualTo(MetricsHistory.SAMPLES * 10L);
        for (int i = 1; i < s.time().length; i++) {
            assertThat(s.time()[i]).isGreaterThan(s.time()[i - 1]);
            assertThat(s.executionsPerMinute()[i]).isEqualTo(6.0);
        }
    }
}
