package dev.airlock.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The server-wide sandbox limit ({@code --max-sandboxes}) is a reservation, not a check followed
 * by a create: a client that fires many creates at once gets exactly the limit, and a clear 429
 * for the rest.
 */
class SandboxLimitTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int LIMIT = 2;
    private static final int CONCURRENT = 8;
    private static LiveServer live;

    @BeforeAll
    static void start() {
        live = LiveServer.start(c -> c.withPoolSize(0).withMaxSandboxes(LIMIT));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    @Test
    void eightConcurrentCreatesAgainstALimitOfTwoGiveExactlyTwoSandboxes() throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        List<HttpResponse<String>> answers = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<HttpResponse<String>>> creates = new ArrayList<>();
            for (int i = 0; i < CONCURRENT; i++) {
                creates.add(threads.submit(() -> {
                    go.await();
                    return live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 120}");
                }));
            }
            go.countDown();
            for (Future<HttpResponse<String>> f : creates) {
                answers.add(f.get());
            }
        }
        List<String> created = answers.stream().filter(r -> r.statusCode() == 201)
                .map(r -> JSON.readTree(r.body()).path("id").asString()).toList();
        try {
            assertThat(created).as("sandboxes created: %s", answers.stream().map(r -> r.statusCode() + " " + r.body()).toList()).hasSize(LIMIT);
            List<HttpResponse<String>> refused = answers.stream().filter(r -> r.statusCode() != 201).toList();
            assertThat(refused).hasSize(CONCURRENT - LIMIT).allSatisfy(r -> {
                assertThat(r.statusCode()).as(r.body()).isEqualTo(429);
                assertThat(r.body()).contains("--max-sandboxes", "limit of " + LIMIT);
            });
            assertThat(live.raw("GET", "/v1/sandboxes", null).body()).contains(created);
        } finally {
            for (String id : created) {
                assertThat(live.raw("DELETE", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(204);
            }
        }
        // destroyed sandboxes give their slots back
        HttpResponse<String> again = live.raw("POST", "/v1/sandboxes", "{}");
        assertThat(again.statusCode()).as(again.body()).isEqualTo(201);
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + JSON.readTree(again.body()).path("id").asString(), null).statusCode()).isEqualTo(204);
    }
}
