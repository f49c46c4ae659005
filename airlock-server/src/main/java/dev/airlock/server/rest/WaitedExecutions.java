package dev.airlock.server.rest;

import dev.airlock.core.ExecResult;
import dev.airlock.core.OutputListener;
import dev.airlock.server.command.Command;
import dev.airlock.server.http.ClientDisconnects;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.wire.Json;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.time.Duration;
import java.util.Base64;

/**
 * The REST door's executions that a request waits for: an exec, a cell, a one-shot run. Streamed
 * as NDJSON when asked ({@code Accept: application/x-ndjson}); otherwise nothing is written until
 * they end, so a client that gives up is noticed by watching its connection, and the execution is
 * then killed with everything it started (recorded as cancelled).
 */
final class WaitedExecutions {

    private static final Logger LOG = LoggerFactory.getLogger(WaitedExecutions.class);
    private static final String NDJSON = "application/x-ndjson";

    private final ClientDisconnects disconnects;

    WaitedExecutions(ClientDisconnects disconnects) {
        this.disconnects = disconnects;
    }

    void exec(RestCall c) throws IOException {
        JsonNode body = c.json(RestCommands.EXEC_FIELDS);
        String id = c.param("id");
        var source = RestCommands.source(body);
        var options = RestCommands.options(body);
        if (Json.bool(body, "background")) {
            c.send(202, JsonViews.process(c.execute(new Command.StartProcess(id, source, options))));
            return;
        }
        String accept = c.req.getHeader("Accept");
        if (accept != null && accept.contains(NDJSON)) {
            c.resp.setStatus(200);
            c.resp.setContentType(NDJSON);
            c.execute(new Command.Exec(id, source, options, start -> new NdjsonExecStream().run(start, c.resp.getOutputStream())));
            return;
        }
        // Nothing is written until the process ends, so a client that gives up is noticed by watching its connection:
        // interrupting this thread cancels the execution (it is killed with everything it started, the result recorded as cancelled).
        Thread handler = Thread.currentThread();
        ExecResult result;
        try (ClientDisconnects.Watch watch = disconnects.watch(c.req, handler::interrupt)) {
            result = c.execute(new Command.Exec(id, source, options, Command.Waiter.listening(OutputListener.NONE)));
            if (watch.disconnected()) {
                Thread.interrupted();
                LOG.info("sandbox {}: the client of a plain exec went away; its execution was killed", id);
                return;
            }
        }
        c.send(200, Json.result(result));
    }

    /** Runs a cell; as NDJSON (Accept: application/x-ndjson) its outputs stream as they come, then the result. */
    void runCell(RestCall c) throws IOException {
        JsonNode body = c.json(RestCommands.CELL_FIELDS);
        String id = c.param("id");
        String context = c.param("context");
        String code = Json.string(body, "code");
        java.time.Duration timeout = RestCommands.timeout(body);
        String accept = c.req.getHeader("Accept");
        if (accept != null && accept.contains(NDJSON)) {
            c.resp.setStatus(200);
            c.resp.setContentType(NDJSON);
            new NdjsonCellStream().run(listener -> c.execute(new Command.RunCell(id, context, code, timeout, listener)),
                    c.resp.getOutputStream());
            return;
        }
        Thread handler = Thread.currentThread();
        dev.airlock.server.command.CellResult result;
        try (ClientDisconnects.Watch watch = disconnects.watch(c.req, handler::interrupt)) {
            result = c.execute(new Command.RunCell(id, context, code, timeout, null));
            if (watch.disconnected()) {
                Thread.interrupted();
                LOG.info("sandbox {}: the client of a cell in context {} went away; the cell was interrupted", id, context);
                return;
            }
        }
        c.send(200, JsonViews.cell(result));
    }

    void run(RestCall c) throws IOException {
        Command.Run run = RestCommands.run(c.json(RestCommands.RUN_FIELDS));
        Thread handler = Thread.currentThread();
        Command.RunResult r;
        try (ClientDisconnects.Watch watch = disconnects.watch(c.req, handler::interrupt)) {
            r = c.execute(run);
            if (watch.disconnected()) {
                Thread.interrupted();
                return;
            }
        }
        ObjectNode answer = Json.result(r.result());
        ArrayNode outputs = answer.putArray("outputs");
        for (Command.RunOutput o : r.outputs()) {
            ObjectNode n = outputs.addObject().put("path", o.path()).put("size", o.size());
            if (o.content() != null) {
                n.put("contentBase64", Base64.getEncoder().encodeToString(o.content()));
            } else {
                n.put("notReturned", o.notReturned());
            }
        }
        c.send(200, answer);
    }
}
