package dev.airlock.cli.bench;

import dev.airlock.cli.PlainHttp;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;

/** The few REST calls the benchmark makes, over one keep-alive HTTP/1.1 connection ({@link PlainHttp}). */
final class BenchClient {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final PlainHttp http;

    BenchClient(URI base, String token) {
        this.http = new PlainHttp(base, token, null, PlainHttp.BENCH_READ_TIMEOUT_MILLIS);
    }

    /** {@code GET /health}, which must answer 200: the round trip of the client and the loopback, with next to no work of the server's. */
    void health() throws IOException {
        PlainHttp.Response r = http.send("GET", "/health", null);
        if (r.status() != 200) {
            throw new IllegalStateException("GET /health answered " + r.status() + ": " + r.body());
        }
    }

    String create() throws IOException, InterruptedException {
        return create("{}");
    }

    String create(String body) throws IOException, InterruptedException {
        return call("POST", "/v1/sandboxes", body, 201).get("id").asString();
    }

    /** A sandbox created with {@code {}}: its id and, on a node of a cluster, the node placement chose. */
    String[] createPlaced() throws IOException, InterruptedException {
        JsonNode s = call("POST", "/v1/sandboxes", "{}", 201);
        return new String[] {s.get("id").asString(), s.path("node").asString()};
    }

    /** Takes a snapshot of the sandbox's files; returns its id. */
    String snapshot(String id) throws IOException, InterruptedException {
        return call("POST", "/v1/sandboxes/" + id + "/snapshots", "{}", 201).get("id").asString();
    }

    /** A snapshot of {@code id}'s files and processes with their memory (gVisor): its id. */
    String snapshotWithMemory(String id) throws IOException, InterruptedException {
        return call("POST", "/v1/sandboxes/" + id + "/snapshots", "{\"memory\": true}", 201).get("id").asString();
    }

    /** Creates {@code count} sandboxes from a snapshot, with {@code limits} (a JSON object); returns their ids. */
    List<String> fork(String snapshot, int count, String limits) throws IOException, InterruptedException {
        List<String> ids = new java.util.ArrayList<>();
        call("POST", "/v1/snapshots/" + snapshot + "/fork", "{\"count\": " + count + ", \"limits\": " + limits + "}", 201).get("sandboxes")
                .forEach(s -> ids.add(s.get("id").asString()));
        return ids;
    }

    void deleteSnapshot(String snapshot) throws IOException, InterruptedException {
        call("DELETE", "/v1/snapshots/" + snapshot, null, 204);
    }

    /** A sandbox of the stored image {@code image}, living at most {@code ttlSeconds}. */
    String create(String image, int ttlSeconds) throws IOException, InterruptedException {
        ObjectNode body = JSON.createObjectNode().put("image", image).put("ttlSeconds", ttlSeconds);
        return call("POST", "/v1/sandboxes", body.toString(), 201).get("id").asString();
    }

    /** A new interpreter context in {@code sandbox}: its id, once its kernel answers. */
    String createContext(String sandbox) throws IOException, InterruptedException {
        return call("POST", "/v1/sandboxes/" + sandbox + "/contexts", "{}", 201).get("id").asString();
    }

    void deleteContext(String sandbox, String context) throws IOException, InterruptedException {
        call("DELETE", "/v1/sandboxes/" + sandbox + "/contexts/" + context, null, 204);
    }

    /** Runs one cell; its result, which must have status ok. */
    JsonNode runCell(String sandbox, String context, String code) throws IOException, InterruptedException {
        JsonNode result = call("POST", "/v1/sandboxes/" + sandbox + "/contexts/" + context + "/run",
                JSON.createObjectNode().put("code", code).toString(), 200);
        if (!result.get("status").asString().equals("ok")) {
            throw new IllegalStateException("benchmark cell failed: " + result);
        }
        return result;
    }

    void delete(String id) throws IOException, InterruptedException {
        call("DELETE", "/v1/sandboxes/" + id, null, 204);
    }

    void exec(String id, String... argv) throws IOException, InterruptedException {
        ObjectNode body = JSON.createObjectNode();
        ArrayNode command = body.putArray("command");
        List.of(argv).forEach(command::add);
        JsonNode result = call("POST", "/v1/sandboxes/" + id + "/exec", body.toString(), 200);
        if (result.get("exitCode").asInt() != 0) {
            throw new IllegalStateException("benchmark command failed: " + result);
        }
    }

    /** Waits until the server's warm pool holds a sandbox again (its metric), so the next create finds one. */
    void awaitPoolReady() throws IOException, InterruptedException {
        awaitPoolReady(1);
    }

    /**
     * Waits until the server's warm pool holds at least {@code ready} sandboxes and no teardown runs
     * on in the background (its metrics): the next request finds a quiet host.
     */
    void awaitPoolReady(int ready) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30 + ready).toNanos();
        while (System.nanoTime() < deadline) {
            PlainHttp.Response r = http.send("GET", "/metrics", null);
            if (metric(r.body(), "airlock_pool_ready") >= ready && metric(r.body(), "airlock_sandboxes_tearing_down") == 0) {
                return;
            }
            Thread.sleep(10);
        }
        throw new IllegalStateException("the server's warm pool did not refill to " + ready + " within " + (30 + ready) + "s");
    }

    /** The value of the untagged metric {@code name} in a Prometheus text answer, or -1 when it has none. */
    private static double metric(String text, String name) {
        return text.lines().filter(l -> l.startsWith(name + " ")).mapToDouble(l -> Double.parseDouble(l.substring(name.length() + 1)))
                .findFirst().orElse(-1);
    }

    /** A REST one-shot ({@code POST /v1/run}), which must exit 0. */
    void runOnce(String language, String code) throws IOException, InterruptedException {
        JsonNode result = call("POST", "/v1/run", JSON.createObjectNode().put("language", language).put("code", code).toString(), 200);
        if (result.get("exitCode").asInt() != 0) {
            throw new IllegalStateException("benchmark one-shot failed: " + result);
        }
    }

    private JsonNode call(String method, String path, String body, int expected) throws IOException {
        PlainHttp.Response r = http.send(method, path, body);
        if (r.status() != expected) {
            throw new IllegalStateException(method + " " + path + " answered " + r.status() + ": " + r.body());
        }
        return r.body().isEmpty() ? JSON.createObjectNode() : JSON.readTree(r.body());
    }
}
