package dev.airlock.cli.bench;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The tails' percentiles are nearest-rank over the requests that succeeded; failures only count in the share. */
class TailTest {

    @Test
    void percentilesAreNearestRankOfTheSuccessfulRequests() {
        List<Double> millis = new ArrayList<>();
        for (int i = 100; i >= 1; i--) {
            millis.add((double) i);
        }
        TailCases.Tail t = TailCases.Tail.of("case", 10, millis, 0, null);
        assertThat(t.p50()).isEqualTo(50);
        assertThat(t.p95()).isEqualTo(95);
        assertThat(t.p99()).isEqualTo(99);
        assertThat(t.requests()).isEqualTo(100);
        assertThat(t.failedShare()).isZero();
    }

    @Test
    void failuresCountInTheShareNotInThePercentiles() {
        TailCases.Tail t = TailCases.Tail.of("case", 3, List.of(7.0, 5.0, 6.0), 1, "refused");
        assertThat(t.requests()).isEqualTo(4);
        assertThat(t.failedShare()).isEqualTo(0.25);
        assertThat(t.p50()).isEqualTo(6);
        assertThat(t.p99()).isEqualTo(7);
    }

    @Test
    void allFailedLeavesNoPercentile() {
        TailCases.Tail t = TailCases.Tail.of("case", 2, List.of(), 2, "refused");
        assertThat(t.p50()).isNaN();
        assertThat(t.failedShare()).isEqualTo(1.0);
    }
}
