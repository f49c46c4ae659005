package dev.airlock.client;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * One streamed execution: sends the exec request with {@code Accept: application/x-ndjson}, hands
 * each {@code stdout}/{@code stderr} line to the {@link OutputHandler} as it arrives, and returns
 * the {@code result} line. Leaving early for any reason (handler threw, thread interrupted) closes
 * the stream, which makes the server kill the process.
 */
final class ExecStream {

    /** A result line carries up to the output limit of each stream, JSON-escaped. */
    static final int MAX_LINE = 1 << 30;
    /** How much streamed output is kept for a result line that does not repeat it. */
    private static final int MAX_KEPT_CHARS = 16 << 20;

    private ExecStream() {
    }

    static ExecResult run(Transport transport, String path, Exec exec, OutputHandler handler) {
        HttpRequest request = transport.request(path, true)
                .header("Accept", "application/x-ndjson")
                .header("Content-Type", "application/json")
                .POST(Transport.jsonBody(RequestBodies.exec(exec, false)))
                .build();
        String what = Transport.describe(request);
        HttpResponse<InputStream> response = transport.open(request);
        String type = response.headers().firstValue("Content-Type").orElse("");
        if (!type.contains("ndjson")) {
            // the server chose not to stream: the body is the plain result
            JsonNode n = transport.readJson(response);
            return parseResult(n, "", "", response.statusCode(), what);
        }
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        try (InputStream in = response.body()) {
            NdjsonLines lines = new NdjsonLines(in, MAX_LINE);
            byte[] line;
            while ((line = lines.next()) != null) {
                if (Thread.currentThread().isInterrupted()) {
                    throw new AirlockInterruptedException("interrupted while streaming " + what + "; the process is killed", null);
                }
                JsonNode n = parseLine(line, response.statusCode(), what);
                String kind = n.path("type").isString() ? n.path("type").stringValue() : "";
                switch (kind) {
                    case "stdout" -> handler.stdout(keep(out, data(n, response.statusCode(), what)));
                    case "stderr" -> handler.stderr(keep(err, data(n, response.statusCode(), what)));
                    case "result" -> {
                        JsonNode r = n.path("result").isObject() ? n.path("result") : n;
                        return parseResult(r, out.toString(), err.toString(), response.statusCode(), what);
                    }
                    case "error" -> {
                        JsonNode e = n.path("error").isObject() ? n.path("error") : n;
                        throw Errors.fromStreamError(e);
                    }
                    default -> {
                        // a line type this client does not know: newer servers may add some
                    }
                }
            }
            throw Errors.unreadable(response.statusCode(), what, "the stream ended before its result line");
        } catch (IOException e) {
            throw transport.broken(what, e);
        }
    }

    private static String keep(StringBuilder kept, String chunk) {
        if (kept.length() < MAX_KEPT_CHARS) {
            kept.append(chunk, 0, Math.min(chunk.length(), MAX_KEPT_CHARS - kept.length()));
        }
        return chunk;
    }

    private static JsonNode parseLine(byte[] line, int status, String what) {
        try {
            JsonNode n = Json.MAPPER.readTree(line);
            if (n == null || !n.isObject()) {
                throw Errors.unreadable(status, what, "a stream line is not a JSON object");
            }
            return n;
        } catch (JacksonException e) {
            throw Errors.unreadable(status, what, "a stream line is not JSON (" + e.getOriginalMessage() + ")");
        }
    }

    private static String data(JsonNode n, int status, String what) {
        JsonNode d = n.path("data");
        if (!d.isString()) {
            throw Errors.unreadable(status, what, "an output line has no string 'data'");
        }
        return d.stringValue();
    }

    static ExecResult parseResult(JsonNode n, String out, String err, int status, String what) {
        return Transport.parse(n, r -> Json.result(r, out, err), status, what);
    }
}
