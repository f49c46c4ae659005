package dev.airlock.client;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The interpreter's wire format (docs/rest-api.md, "Interpreter contexts") against a fake server. */
class InterpreterTest {

    static final String ID = SandboxLifecycleTest.ID;
    static final String CONTEXTS = "/v1/sandboxes/" + ID + "/contexts";
    static final String CONTEXT = """
            {"id": "ctx-1", "language": "python", "state": "ready", "createdAt": "2026-12-01T10:00:00Z", "cells": 0, "message": null}""";
    static final byte[] PNG = {(byte) 0x89, 'P', 'N', 'G', 13, 10, 26, 10};
    static final String CELL = """
            {"context": "ctx-1", "status": "ok", "executionCount": 3, "stdout": "hi\\n", "stderr": "",
             "outputs": [{"type": "display", "data": {"image/png": "%s", "text/plain": "<Figure>"}},
                         {"type": "result", "data": {"text/plain": "   a\\n0  1", "text/html": "<table></table>",
                          "application/json": {"a": [1]}}}],
             "error": null, "truncated": false, "durationMs": 15, "message": null}""".formatted(Base64.getEncoder().encodeToString(PNG));

    FakeAirlock server;
    Airlock airlock;
    RemoteSandbox sandbox;

    @BeforeEach
    void start() throws IOException {
        server = new FakeAirlock();
        server.reply("GET", "/v1/sandboxes/" + ID, 200, SandboxLifecycleTest.SANDBOX);
        airlock = server.client();
        sandbox = airlock.get(ID);
    }

    @AfterEach
    void stop() {
        airlock.close();
        server.close();
    }

    @Test
    void theFirstRunMakesAContextWhenTheSandboxHasNoneAndResultsHaveTypedAccessors() {
        server.reply("GET", CONTEXTS, 200, "{\"contexts\": []}");
        server.reply("POST", CONTEXTS, 201, CONTEXT);
        server.reply("POST", CONTEXTS + "/ctx-1/run", 200, CELL);

        CellResult r = sandbox.interpreter().run("df", Duration.ofSeconds(5));

        assertThat(server.last().bodyText()).isEqualTo("{\"code\":\"df\",\"timeoutSeconds\":5.0}");
        assertThat(r.ok()).isTrue();
        assertThat(r.executionCount()).isEqualTo(3);
        assertThat(r.stdout()).isEqualTo("hi\n");
        assertThat(r.text()).isEqualTo("   a\n0  1");
        assertThat(r.html()).isEqualTo("<table></table>");
        assertThat(r.png()).isEqualTo(PNG);
        assertThat(r.result().get("application/json")).isEqualTo("{\"a\":[1]}");
        assertThat(r.outputs().get(0).isResult()).isFalse();
        assertThat(r.error()).isNull();
    }

    @Test
    void anExistingContextIsReusedAndAnErrorIsAResult() {
        server.reply("GET", CONTEXTS, 200, "{\"contexts\": [" + CONTEXT + "]}");
        server.reply("POST", CONTEXTS + "/ctx-1/run", 200, """
                {"context": "ctx-1", "status": "error", "executionCount": null, "stdout": "", "stderr": "", "outputs": [],
                 "error": {"name": "NameError", "value": "name 'x' is not defined", "traceback": ["line 1", "NameError"]},
                 "truncated": false, "durationMs": 4, "message": null}""");

        CellResult r = sandbox.interpreter().run("x");

        assertThat(server.requests).noneMatch(q -> q.method().equals("POST") && q.rawPath().equals(CONTEXTS));
        assertThat(r.ok()).isFalse();
        assertThat(r.executionCount()).isNull();
        assertThat(r.error()).isEqualTo(new CellResult.Error("NameError", "name 'x' is not defined", List.of("line 1", "NameError")));
        assertThat(r.text()).isNull();
        assertThat(r.png()).isNull();
    }

    @Test
    void aStreamedCellHandsOutputsOverAsTheyCome() {
        server.on("POST", CONTEXTS + "/ctx-2/run", ex -> FakeAirlock.send(ex, 200, "application/x-ndjson", """
                {"type":"stdout","data":"hi\\n"}
                {"type":"heartbeat"}
                {"type":"output","output":{"type":"display","data":{"text/plain":"<Figure>"}}}
                {"type":"result","result":%s}
                """.formatted(CELL.replace("\n", ""))));
        List<String> seen = new ArrayList<>();

        CellResult r = sandbox.interpreter("ctx-2").run("plot()", null, new CellHandler() {
            @Override
            public void stdout(String text) {
                seen.add("stdout " + text);
            }

            @Override
            public void output(CellOutput output) {
                seen.add("output " + output.text());
            }
        });

        assertThat(server.last().header("Accept")).isEqualTo("application/x-ndjson");
        assertThat(seen).containsExactly("stdout hi\n", "output <Figure>");
        assertThat(r.text()).isEqualTo("   a\n0  1");
    }

    @Test
    void contextsAreListedMadeRestartedAndDeleted() {
        server.reply("GET", CONTEXTS, 200, "{\"contexts\": [" + CONTEXT + "]}");
        server.reply("POST", CONTEXTS, 201, CONTEXT.replace("ctx-1", "ctx-2"));
        server.reply("POST", CONTEXTS + "/ctx-2/restart", 200, CONTEXT.replace("ctx-1", "ctx-2"));
        server.reply("DELETE", CONTEXTS + "/ctx-2", 204, null);

        assertThat(sandbox.interpreters()).extracting(InterpreterInfo::id).containsExactly("ctx-1");
        Interpreter second = sandbox.createInterpreter();
        assertThat(second.id()).isEqualTo("ctx-2");
        assertThat(second.restart().state()).isEqualTo("ready");
        second.delete();
        assertThat(server.last().method()).isEqualTo("DELETE");
    }
}
