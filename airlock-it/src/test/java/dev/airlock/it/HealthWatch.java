package dev.airlock.it;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Asks {@code GET /health} every 100 ms on its own connection while an attack runs, and remembers
 * the slowest answer (a request that failed or took over 5 s counts as 5 s): "the server keeps
 * answering" as a number a test can bound.
 */
final class HealthWatch implements AutoCloseable {

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final URI health;
    private final AtomicLong slowestMillis = new AtomicLong();
    private final AtomicLong answers = new AtomicLong();
    private final Thread thread;
    private volatile boolean stop;

    HealthWatch(URI server) {
        this.health = URI.create(server + "/health");
        this.thread = Thread.ofVirtual().name("health-watch").start(this::loop);
    }

    private void loop() {
        while (!stop) {
            long start = System.nanoTime();
            long millis;
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(health).timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.ofString());
                millis = r.statusCode() == 200 ? (System.nanoTime() - start) / 1_000_000 : 5_000;
            } catch (Exception e) {
                millis = 5_000;
            }
            answers.incrementAndGet();
            slowestMillis.accumulateAndGet(millis, Math::max);
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** The slowest answer so far, in milliseconds. */
    long slowestMillis() {
        return slowestMillis.get();
    }

    long answers() {
        return answers.get();
    }

    @Override
    public void close() throws InterruptedException {
        stop = true;
        thread.join(10_000);
    }
}
