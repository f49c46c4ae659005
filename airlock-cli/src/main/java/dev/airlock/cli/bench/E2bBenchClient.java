package dev.airlock.cli.bench;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The requests E2B's SDKs make for a sandbox and its first command, as they make them (docs/e2b.md):
 * create, a streamed {@code process.Process/Start} read to its end, kill; over one keep-alive
 * HTTP/1.1 connection to the E2B door.
 */
final class E2bBenchClient {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final URI door;
    private final String key;

    E2bBenchClient(URI door, String key) {
        this.door = door;
        this.key = key;
    }

    /** A sandbox of template base living {@code timeoutSeconds}: its id and envd access token. */
    record Created(String id, String accessToken) {
    }

    Created create(int timeoutSeconds) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(door.resolve("/v2/sandboxes")).header("X-API-Key", key)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"templateID\": \"base\", \"timeout\": " + timeoutSeconds + "}")).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 201) {
            throw new IllegalStateException("E2B create answered " + r.statusCode() + ": " + r.body());
        }
        JsonNode s = JSON.readTree(r.body());
        return new Created(s.get("sandboxID").asString(), s.get("envdAccessToken").asString());
    }

    /** Runs {@code cmd} as the SDK's commands.run does, reading its events to the end; it must exit 0. */
    void run(Created sandbox, String cmd) throws IOException, InterruptedException {
        byte[] message = JSON.createObjectNode().set("process", JSON.createObjectNode().put("cmd", cmd)).toString().getBytes(StandardCharsets.UTF_8);
        byte[] body = ByteBuffer.allocate(5 + message.length).put((byte) 0).putInt(message.length).put(message).array();
        HttpResponse<byte[]> r = http.send(HttpRequest.newBuilder(door.resolve("/process.Process/Start"))
                .header("Content-Type", "application/connect+json").header("E2b-Sandbox-Id", sandbox.id()).header("E2b-Sandbox-Port", "49983")
                .header("X-Access-Token", sandbox.accessToken()).POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(),
                HttpResponse.BodyHandlers.ofByteArray());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("E2B process start answered " + r.statusCode() + ": " + new String(r.body(), StandardCharsets.UTF_8));
        }
        ByteBuffer in = ByteBuffer.wrap(r.body());
        while (in.remaining() >= 5) {
            int flags = in.get() & 0xff;
            byte[] m = new byte[in.getInt()];
            in.get(m);
            JsonNode event = JSON.readTree(m);
            if (flags == 0 && event.path("event").has("end")) {
                if (event.path("event").path("end").path("exitCode").asInt(0) != 0) {
                    throw new IllegalStateException("benchmark command failed: " + event);
                }
                return;
            }
        }
        throw new IllegalStateException("E2B process stream ended without the process's end");
    }

    void kill(Created sandbox) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(door.resolve("/sandboxes/" + sandbox.id())).header("X-API-Key", key)
                .DELETE().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 204) {
            throw new IllegalStateException("E2B kill answered " + r.statusCode() + ": " + r.body());
        }
    }
}
