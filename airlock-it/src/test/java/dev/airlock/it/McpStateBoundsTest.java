package dev.airlock.it;

import dev.airlock.server.mcp.McpHttpEndpoint;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What an MCP client with a valid token can make the server keep: nothing for unknown session ids
 * or cancels of unknown calls, a bounded key for a huge request id, a bounded number of sessions.
 * The server keeps answering /health throughout ({@link HealthWatch}). Plus sandbox_exec with a shell line.
 */
class McpStateBoundsTest {

    private static LiveServer live;
    private static RawMcp mcp;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(1));
        mcp = new RawMcp(live.uri(), live.token());
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    private static McpHttpEndpoint.StateSizes state() {
        return live.server.mcpState();
    }

    @Test
    void thousandsOfRequestsWithUnknownSessionIdsLeaveNoState() throws Exception {
        McpHttpEndpoint.StateSizes before = state();
        AtomicInteger notFound = new AtomicInteger();
        try (HealthWatch health = new HealthWatch(live.uri()); ExecutorService threads = Executors.newFixedThreadPool(8)) {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                done.add(threads.submit(() -> {
                    for (int i = 0; i < 400; i++) {
                        HttpResponse<String> r = mcp.post(UUID.randomUUID().toString(), "{\"jsonrpc\":\"2.0\",\"id\":" + i
                                + ",\"method\":\"tools/call\",\"params\":{\"name\":\"sandbox_list\",\"arguments\":{}}}");
                        if (r.statusCode() == 404) {
                            notFound.incrementAndGet();
                        }
                    }
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
            health.assertKeptAnswering();
        }
        assertThat(notFound).hasValue(3200);
        assertThat(state()).isEqualTo(before);
    }

    @Test
    void aCancelWithAHugeRequestIdOrForNoRunningCallIsNotKept() {
        String session = mcp.open();
        McpHttpEndpoint.StateSizes before = state();
        String huge = "x".repeat(4 * 1024 * 1024);
        for (int i = 0; i < 5; i++) {
            HttpResponse<String> r = mcp.post(session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\""
                    + huge + i + "\"}}");
            assertThat(r.statusCode()).isLessThan(300);
        }
        for (int i = 0; i < 2000; i++) {
            mcp.post(session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":" + (100_000 + i) + "}}");
        }
        assertThat(state().trackedCalls()).isEqualTo(before.trackedCalls()).isZero();
        assertThat(mcp.post(session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"" + huge + "\"}}")
                .statusCode()).isLessThan(300);
    }

    @Test
    void aClientsSessionsAreBoundedByEndingItsLeastRecentlyUsed() {
        String first = mcp.open();
        List<String> opened = new ArrayList<>();
        for (int i = 0; i < 80; i++) {
            opened.add(mcp.open());
        }
        assertThat(state().sessions()).isLessThanOrEqualTo(64);
        HttpResponse<String> r = mcp.post(first, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(r.body()).contains("has ended");
        String newest = opened.getLast();
        assertThat(mcp.post(newest, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}").statusCode()).isEqualTo(200);
    }

    @Test
    void sandboxExecRunsAShellLineGivenAsAString() {
        String session = mcp.open();
        JsonNode created = mcp.call(session, 2, "sandbox_create", "{}");
        String id = created.at("/result/structuredContent/sandboxId").asString();
        assertThat(id).as(created.toString()).startsWith("al-");
        JsonNode ran = mcp.call(session, 3, "sandbox_exec", "{\"sandboxId\":\"" + id + "\",\"command\":\"echo hello | tr a-z A-Z\"}");
        assertThat(ran.at("/result/structuredContent/stdout").asString()).as(ran.toString()).isEqualTo("HELLO\n");
        JsonNode list = mcp.call(session, 4, "sandbox_exec", "{\"sandboxId\":\"" + id + "\",\"command\":[\"echo\",\"a | b\"]}");
        assertThat(list.at("/result/structuredContent/stdout").asString()).as(list.toString()).isEqualTo("a | b\n");
        JsonNode wrong = mcp.call(session, 5, "sandbox_exec", "{\"sandboxId\":\"" + id + "\",\"command\":42}");
        assertThat(wrong.at("/result/isError").asBoolean()).isTrue();
        assertThat(wrong.toString()).contains("command", "string");
        mcp.call(session, 6, "sandbox_destroy", "{\"sandboxId\":\"" + id + "\"}");
    }

    @Test
    void aCancelStillStopsARunningCall() throws Exception {
        String session = mcp.open();
        String id = mcp.call(session, 2, "sandbox_create", "{}").at("/result/structuredContent/sandboxId").asString();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<JsonNode> slow = threads.submit(() -> mcp.call(session, 7, "sandbox_exec",
                    "{\"sandboxId\":\"" + id + "\",\"command\":\"sleep 60\",\"timeoutSeconds\":120}"));
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> state().trackedCalls() >= 1);
            Thread.sleep(500);
            mcp.post(session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":7}}");
            JsonNode r = slow.get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(r.toString()).contains("cancelled");
        }
        assertThat(state().trackedCalls()).isZero();
        mcp.call(session, 8, "sandbox_destroy", "{\"sandboxId\":\"" + id + "\"}");
    }

    @Test
    void aCancelFromAnotherSessionDoesNotReachTheCall() throws Exception {
        String session = mcp.open();
        String other = mcp.open();
        String id = mcp.call(session, 2, "sandbox_create", "{}").at("/result/structuredContent/sandboxId").asString();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<JsonNode> call = threads.submit(() -> mcp.call(session, 9, "sandbox_exec",
                    "{\"sandboxId\":\"" + id + "\",\"command\":\"sleep 2; echo finished\"}"));
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> state().trackedCalls() >= 1);
            // the same request id, from a session of the same client that did not send the call
            mcp.post(other, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":9}}");
            JsonNode r = call.get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(r.at("/result/structuredContent/stdout").asString()).as(r.toString()).isEqualTo("finished\n");
        }
        mcp.call(session, 10, "sandbox_destroy", "{\"sandboxId\":\"" + id + "\"}");
    }
}
