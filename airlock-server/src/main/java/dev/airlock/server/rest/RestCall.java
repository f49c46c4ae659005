package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.server.command.Command;
import dev.airlock.server.http.BodyReader;
import dev.airlock.server.policy.Caller;
import dev.airlock.server.command.CommandApi;
import dev.airlock.server.wire.Json;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One REST request once its route matched and its operation was granted: the path's parameters,
 * the body and query as read, the authorized caller its commands run as, and the response.
 */
final class RestCall {

    /** JSON bodies are small; files go through the streaming files endpoint. */
    static final int MAX_JSON_BODY = 32 * 1024 * 1024;
    /** Where the body read for the audit digest is kept for the handler. */
    static final String BODY = "airlock.body";

    final HttpServletRequest req;
    final HttpServletResponse resp;
    private final Map<String, String> params;
    private final CommandApi service;
    private final Caller caller;
    /** What a 200 answer becomes before it is sent: on a node of a cluster, a listing joined with the other nodes'. */
    private final java.util.function.UnaryOperator<ObjectNode> ok;

    RestCall(HttpServletRequest req, HttpServletResponse resp, Map<String, String> params, CommandApi service, Caller caller) {
        this(req, resp, params, service, caller, java.util.function.UnaryOperator.identity());
    }

    RestCall(HttpServletRequest req, HttpServletResponse resp, Map<String, String> params, CommandApi service, Caller caller,
             java.util.function.UnaryOperator<ObjectNode> ok) {
        this.ok = ok;
        this.req = req;
        this.resp = resp;
        this.params = params;
        this.service = service;
        this.caller = caller;
    }

    /** The path parameter {@code name} ({@code id}, {@code pid}). */
    String param(String name) {
        return params.get(name);
    }

    /** Carries out {@code command} as this request's caller. */
    <R> R execute(Command<R> command) {
        return service.execute(caller, command);
    }

    Caller caller() {
        return caller;
    }

    /** The body as a JSON object with only {@code fields}. */
    JsonNode json(Set<String> fields) throws IOException {
        return Json.parseObject(body(req), fields);
    }

    static byte[] body(HttpServletRequest req) throws IOException {
        if (req.getAttribute(BODY) instanceof byte[] read) {
            return read;
        }
        long declared = req.getContentLengthLong();
        return BodyReader.read(req, MAX_JSON_BODY, "request body is " + (declared > MAX_JSON_BODY ? declared + " bytes, " : "")
                + "over the limit of " + MAX_JSON_BODY + " bytes: send files with PUT /v1/sandboxes/{id}/files");
    }

    /**
     * Values of a query parameter, from the query string only: the servlet API's getParameter would
     * also parse an upload body sent as a form, consuming the file.
     */
    List<String> query(String name) {
        List<String> values = new ArrayList<>();
        String q = req.getQueryString();
        if (q == null) {
            return values;
        }
        for (String pair : q.split("&")) {
            int eq = pair.indexOf('=');
            String key = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            if (key.equals(name)) {
                values.add(eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return values;
    }

    /** The first value of query parameter {@code name}, or null. */
    String first(String name) {
        List<String> values = query(name);
        return values.isEmpty() ? null : values.getFirst();
    }

    void send(int status, ObjectNode body) throws IOException {
        ObjectNode answer = status == 200 ? ok.apply(body) : body;
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.getOutputStream().write(answer.toString().getBytes(StandardCharsets.UTF_8));
    }

    void noContent() {
        resp.setStatus(204);
    }

    /** Starts a binary answer (a file's bytes follow). */
    void octets() {
        resp.setStatus(200);
        resp.setContentType("application/octet-stream");
    }

    /** A field that must be a whole signal number. */
    static int signal(JsonNode body) {
        Double signal = Json.number(body, "signal");
        if (signal == null || signal != Math.rint(signal)) {
            throw AirlockException.invalid("field 'signal' must be a signal number, such as 15 (TERM) or 9 (KILL)");
        }
        return signal.intValue();
    }
}
