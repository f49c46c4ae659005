package dev.airlock.it;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Asks {@code GET /health} every 100 ms on its own connection while an attack runs: "the server
 * keeps answering". An ask not answered with 200 within {@link #ANSWER_WITHIN} is unanswered, and
 * {@link #assertKeptAnswering()} wants none. How long the answers took is reported, never asserted:
 * a loaded machine answers later, not wrongly.
 */
final class HealthWatch implements AutoCloseable {

    /** The longest an answer may take to count: far beyond any queue the attack could put it behind. */
    static final Duration ANSWER_WITHIN = Duration.ofSeconds(5);

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(ANSWER_WITHIN).build();
    private final URI health;
    private final AtomicLong slowestMillis = new AtomicLong();
    private final AtomicLong answers = new AtomicLong();
    private final AtomicLong unanswered = new AtomicLong();
    private final Thread thread;
    private volatile boolean stop;

    HealthWatch(URI server) {
        this.health = URI.create(server + "/health");
        this.thread = Thread.ofVirtual().name("health-watch").start(this::loop);
    }

    private void loop() {
        while (!stop) {
            long start = System.nanoTime();
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(health).timeout(ANSWER_WITHIN).build(),
                        HttpResponse.BodyHandlers.ofString());
                (r.statusCode() == 200 ? answers : unanswered).incrementAndGet();
            } catch (Exception e) {
                unanswered.incrementAndGet();
            }
            slowestMillis.accumulateAndGet((System.nanoTime() - start) / 1_000_000, Math::max);
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Stops watching and asserts that every ask was answered (and that there was one). */
    void assertKeptAnswering() throws InterruptedException {
        close();
        assertThat(unanswered.get()).as("GET /health asks not answered with 200 within %s (of %d answered; the slowest took %d ms)",
                ANSWER_WITHIN, answers.get(), slowestMillis.get()).isZero();
        assertThat(answers.get()).as("GET /health answers").isPositive();
    }

    @Override
    public void close() throws InterruptedException {
        stop = true;
        thread.join(ANSWER_WITHIN.plusSeconds(5).toMillis());
    }
}
