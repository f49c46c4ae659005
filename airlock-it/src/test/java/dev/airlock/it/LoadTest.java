package dev.airlock.it;

import dev.airlock.client.Airlock;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Many clients at once, half over REST (the SDK), half over MCP Streamable HTTP (the MCP Java SDK
 * client), each looping create, write a file, exec, read, list, destroy for a fixed time. Every
 * call must succeed, except the documented 429 refusals; p50/p99 per operation are printed.
 * The short version runs by default; {@code -Dairlock.long=true} runs 50 clients for 60 s.
 */
class LoadTest {

    static final boolean LONG = Boolean.getBoolean("airlock.long");
    private static final int CLIENTS = LONG ? 50 : 8;
    private static final Duration RUN_FOR = LONG ? Duration.ofSeconds(60) : Duration.ofSeconds(10);
    /** Client-side bound of every call: far beyond a healthy answer, so only a hang trips it. */
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);
    /** How long /health may take while the server is loaded: proves it never stops answering. */
    private static final Duration HEALTH_BOUND = Duration.ofSeconds(5);

    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(2).withMaxSandboxes(CLIENTS + 8));
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    @Test
    void concurrentRestAndMcpClientsMixingEveryOperationSeeNoFailureButTheDocumented429s() throws Exception {
        OperationTimes times = new OperationTimes();
        String run = UUID.randomUUID().toString();
        long deadline = System.nanoTime() + RUN_FOR.toNanos();
        long started = System.nanoTime();
        List<Future<?>> workers = new ArrayList<>();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
             Airlock rest = Airlock.builder().url(live.uri()).token(live.token()).requestTimeout(CALL_TIMEOUT).build()) {
            for (int i = 0; i < CLIENTS; i++) {
                int client = i;
                workers.add(threads.submit(() -> {
                    if (client % 2 == 0) {
                        restClient(rest, run, client, deadline, times);
                    } else {
                        mcpClient(client, deadline, times);
                    }
                    return null;
                }));
            }
            Future<?> health = threads.submit(() -> probeHealth(deadline, times));
            for (Future<?> w : workers) {
                w.get(RUN_FOR.toSeconds() + 3 * CALL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            }
            health.get(RUN_FOR.toSeconds() + CALL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        }
        Duration elapsed = Duration.ofNanos(System.nanoTime() - started);
        System.out.printf("load: %d clients (REST and MCP), %s%n%s%n", CLIENTS, RUN_FOR, times.report(elapsed));

        assertThat(times.failureMessages()).as("failed calls (other than 429)").isEmpty();
        assertThat(times.failures()).isZero();
        for (String op : List.of("rest create", "rest exec", "rest write", "rest read", "rest list", "rest destroy",
                "mcp create", "mcp exec", "mcp write", "mcp read", "mcp list", "mcp destroy", "health")) {
            assertThat(times.calls(op)).as("successful %s calls", op).isPositive();
        }
        assertThat(live.client.list(Map.of("run", run))).as("sandboxes of the run still alive").isEmpty();
    }

    /** One REST client: the SDK, as an application uses it. */
    private static void restClient(Airlock airlock, String run, int client, long deadline, OperationTimes times) {
        for (int cycle = 0; System.nanoTime() < deadline; cycle++) {
            RemoteSandbox sandbox;
            try {
                sandbox = times.time("rest create", () -> airlock.create(SandboxSpec.builder().label("run", run).build()));
            } catch (RuntimeException | AssertionError refusedOrFailed) {
                pause();
                continue;
            }
            try {
                String text = "client " + client + " cycle " + cycle + "\n";
                times.time("rest write", () -> sandbox.files().write("/workspace/in.txt", text.getBytes(StandardCharsets.UTF_8)));
                ExecResult r = times.time("rest exec", () -> sandbox.exec(Exec.command("sh", "-c",
                        "tr a-z A-Z < /workspace/in.txt > /workspace/out.txt && cat /workspace/out.txt")));
                expect(times, "rest exec", r.stdout(), text.toUpperCase());
                byte[] read = times.time("rest read", () -> sandbox.files().read("/workspace/out.txt"));
                expect(times, "rest read", new String(read, StandardCharsets.UTF_8), text.toUpperCase());
                times.time("rest list", () -> sandbox.files().list("/workspace"));
            } catch (RuntimeException | AssertionError recorded) {
                // counted by times; the cycle ends with the sandbox destroyed
            } finally {
                try {
                    times.time("rest destroy", () -> airlock.delete(sandbox.id()));
                } catch (RuntimeException | AssertionError recorded) {
                    // counted
                }
            }
        }
    }

    /** One MCP client: its own session, as an agent uses the tools. */
    private static void mcpClient(int client, long deadline, OperationTimes times) {
        McpLoadClient mcp;
        try {
            mcp = times.time("mcp connect", () -> new McpLoadClient(live.uri(), live.token(), CALL_TIMEOUT));
        } catch (RuntimeException | AssertionError recorded) {
            return;
        }
        try (mcp) {
            for (int cycle = 0; System.nanoTime() < deadline; cycle++) {
                String sandbox;
                try {
                    sandbox = times.time("mcp create", () -> mcp.create(120));
                } catch (RuntimeException | AssertionError refusedOrFailed) {
                    pause();
                    continue;
                }
                try {
                    String text = "agent " + client + " cycle " + cycle + "\n";
                    times.time("mcp write", () -> {
                        mcp.write(sandbox, "in.txt", text);
                        return null;
                    });
                    Map<String, Object> r = times.time("mcp exec", () -> mcp.exec(sandbox, List.of("sh", "-c",
                            "tr a-z A-Z < in.txt > out.txt && cat out.txt")));
                    expect(times, "mcp exec", r.get("stdout"), text.toUpperCase());
                    expect(times, "mcp read", times.time("mcp read", () -> mcp.read(sandbox, "out.txt")), text.toUpperCase());
                    times.time("mcp list", () -> mcp.list(sandbox));
                } catch (RuntimeException | AssertionError recorded) {
                    // counted by times
                } finally {
                    try {
                        times.time("mcp destroy", () -> {
                            mcp.destroy(sandbox);
                            return null;
                        });
                    } catch (RuntimeException | AssertionError recorded) {
                        // counted
                    }
                }
            }
        }
    }

    /** /health four times a second, each within {@link #HEALTH_BOUND}, for as long as the load runs. */
    private static Void probeHealth(long deadline, OperationTimes times) throws InterruptedException {
        HttpClient http = HttpClient.newBuilder().connectTimeout(HEALTH_BOUND).build();
        HttpRequest health = HttpRequest.newBuilder(URI.create(live.uri() + "/health")).timeout(HEALTH_BOUND).build();
        while (System.nanoTime() < deadline) {
            try {
                HttpResponse<String> r = times.time("health", () -> {
                    try {
                        return http.send(health, HttpResponse.BodyHandlers.ofString());
                    } catch (Exception e) {
                        throw new AssertionError("/health did not answer within " + HEALTH_BOUND + ": " + e, e);
                    }
                });
                expect(times, "health", r.statusCode(), 200);
            } catch (RuntimeException | AssertionError recorded) {
                // counted
            }
            Thread.sleep(250);
        }
        return null;
    }

    private static void expect(OperationTimes times, String operation, Object actual, Object expected) {
        if (!expected.equals(actual)) {
            AssertionError wrong = new AssertionError("expected " + expected + " but got " + actual);
            times.failed(operation, wrong);
            throw wrong;
        }
    }

    private static void pause() {
        try {
            Thread.sleep(50);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
