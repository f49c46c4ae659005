package dev.airlock.cli.verify;

import dev.airlock.core.Printable;
import dev.airlock.server.AirlockServer;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/** The REST API of a server a recovery scenario started in verify's JVM, with its token. */
record ScenarioRest(HttpClient http, AirlockServer server) {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** The answer's body (an empty object for none); anything but {@code expected} is an IOException. */
    JsonNode call(String method, String path, String body, int expected) throws IOException, InterruptedException {
        HttpResponse<String> r = send(method, path, body);
        if (r.statusCode() != expected) {
            throw new IOException(method + " " + path + " answered " + r.statusCode() + ": " + Printable.quoted(r.body(), Findings.SHOWN_CHARS));
        }
        return r.body().isEmpty() ? JSON.createObjectNode() : JSON.readTree(r.body());
    }

    /** The manifest of the sandbox's collected outputs, or null when none were kept. */
    JsonNode outputs(String id) throws IOException, InterruptedException {
        HttpResponse<String> r = send("GET", "/v1/outputs/" + id, null);
        return r.statusCode() == 200 ? JSON.readTree(r.body()) : null;
    }

    private HttpResponse<String> send(String method, String path, String body) throws IOException, InterruptedException {
        return http.send(HttpRequest.newBuilder(URI.create(server.uri() + path)).header("Authorization", "Bearer " + server.token())
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .build(), HttpResponse.BodyHandlers.ofString());
    }
}
