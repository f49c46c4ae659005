package dev.airlock.it;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;

/**
 * MCP over Streamable HTTP by hand, for what an SDK client would never send: any session id, any
 * request id, any message. Answers are JSON, or an SSE stream whose data lines carry the reply.
 */
final class RawMcp {

    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String INITIALIZE = """
            {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}""";

    private final HttpClient http = HttpClient.newHttpClient();
    private final URI endpoint;
    private final String token;

    RawMcp(URI server, String token) {
        this.endpoint = URI.create(server + "/mcp");
        this.token = token;
    }

    /** One POST of {@code body} under {@code session} (null: none). */
    HttpResponse<String> post(String session, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(endpoint)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (session != null) {
            b.header("Mcp-Session-Id", session);
        }
        try {
            return http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** Opens a session (initialize, then notifications/initialized) and returns its id. */
    String open() {
        HttpResponse<String> r = post(null, INITIALIZE);
        if (r.statusCode() != 200) {
            throw new AssertionError("initialize answered " + r.statusCode() + ": " + r.body());
        }
        String session = r.headers().firstValue("Mcp-Session-Id").orElseThrow();
        post(session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        return session;
    }

    /** A tools/call with request id {@code id}; returns the JSON-RPC reply. */
    JsonNode call(String session, int id, String tool, String argumentsJson) {
        HttpResponse<String> r = post(session, "{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"method\":\"tools/call\",\"params\":{\"name\":\""
                + tool + "\",\"arguments\":" + argumentsJson + "}}");
        return reply(r.body(), id);
    }

    /** The message with {@code id} in a JSON answer or an SSE stream. */
    static JsonNode reply(String body, int id) {
        if (body.startsWith("{")) {
            return JSON.readTree(body);
        }
        for (String line : body.split("\n")) {
            if (line.startsWith("data:")) {
                JsonNode n = JSON.readTree(line.substring(5).trim());
                if (n.path("id").asInt(-1) == id) {
                    return n;
                }
            }
        }
        throw new AssertionError("no reply with id " + id + " in: " + body);
    }
}
