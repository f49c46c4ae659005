package dev.airlock.it;

import dev.airlock.client.CellHandler;
import dev.airlock.client.CellOutput;
import dev.airlock.client.CellResult;
import dev.airlock.client.Interpreter;
import dev.airlock.client.InterpreterInfo;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Interpreter contexts over REST against a real server and real sandboxes of the {@code system}
 * image (the host's /usr with Debian's python3-ipykernel, -matplotlib and -pandas, which bin/test
 * installs): state persists between cells, a chart comes back as a PNG of its figure's pixel size,
 * a DataFrame as HTML and text, and an endless loop is interrupted at its timeout with the context
 * still usable; the same through the Java SDK (with streamed outputs) and over MCP (a chart as
 * image content). Prints what a context, a trivial cell and a chart cost.
 */
class InterpreterTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c);
    }

    @AfterAll
    static void closeServer() {
        if (live != null) {
            live.close();
        }
    }

    @Test
    void aContextKeepsStateReturnsChartsAndTablesAndSurvivesAnInterrupt() throws Exception {
        String sandbox = json(live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 600}"), 201).get("id").asString();
        String base = "/v1/sandboxes/" + sandbox + "/contexts";

        long t0 = System.nanoTime();
        JsonNode context = json(live.raw("POST", base, "{}"), 201);
        long createMs = (System.nanoTime() - t0) / 1_000_000;
        assertThat(context.get("state").asString()).isEqualTo("ready");
        String run = base + "/" + context.get("id").asString() + "/run";

        JsonNode set = cell(run, "x = 41", null);
        assertThat(set.get("status").asString()).isEqualTo("ok");
        assertThat(set.get("outputs")).isEmpty();
        t0 = System.nanoTime();
        JsonNode sum = cell(run, "x + 1", null);
        long trivialMs = (System.nanoTime() - t0) / 1_000_000;
        assertThat(sum.get("status").asString()).isEqualTo("ok");
        assertThat(sum.get("outputs").get(0).get("type").asString()).isEqualTo("result");
        assertThat(sum.get("outputs").get(0).get("data").get("text/plain").asString()).isEqualTo("42");

        // a figure never shown explicitly still comes back (the inline backend), at figsize x dpi pixels
        t0 = System.nanoTime();
        JsonNode chart = cell(run, """
                import matplotlib.pyplot as plt
                fig = plt.figure(figsize=(4, 3), dpi=100)
                plt.plot([1, 2, 3], [1, 4, 9])
                print("plotted")""", null);
        long chartMs = (System.nanoTime() - t0) / 1_000_000;
        assertThat(chart.get("status").asString()).as(chart.toString()).isEqualTo("ok");
        assertThat(chart.get("stdout").asString()).isEqualTo("plotted\n");
        JsonNode png = null;
        for (JsonNode o : chart.get("outputs")) {
            if (o.get("data").has("image/png")) {
                png = o.get("data").get("image/png");
            }
        }
        assertThat(png).as("a PNG among " + chart.get("outputs")).isNotNull();
        BufferedImage image = ImageIO.read(new ByteArrayInputStream(Base64.getMimeDecoder().decode(png.asString())));
        assertThat(image.getWidth()).isEqualTo(400);
        assertThat(image.getHeight()).isEqualTo(300);

        JsonNode table = cell(run, "import pandas as pd\npd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [4, 19]})", null);
        assertThat(table.get("status").asString()).as(table.toString()).isEqualTo("ok");
        JsonNode data = table.get("outputs").get(0).get("data");
        assertThat(data.get("text/html").asString()).contains("<table", "Oslo", "Lima");
        assertThat(data.get("text/plain").asString()).contains("city", "Oslo", "19");

        JsonNode error = cell(run, "1/0", null);
        assertThat(error.get("status").asString()).isEqualTo("error");
        assertThat(error.get("error").get("name").asString()).isEqualTo("ZeroDivisionError");

        t0 = System.nanoTime();
        JsonNode loop = cell(run, "while True: pass", 2.0);
        long loopMs = (System.nanoTime() - t0) / 1_000_000;
        assertThat(loop.get("status").asString()).as(loop.toString()).isEqualTo("timeout");
        assertThat(loop.get("error").get("name").asString()).isEqualTo("KeyboardInterrupt");
        assertThat(loopMs).isLessThan(10_000);
        JsonNode after = cell(run, "x", null);
        assertThat(after.get("outputs").get(0).get("data").get("text/plain").asString()).isEqualTo("41");

        // cells are executions on the audit log: the context and a digest of the code, never the code
        var executions = live.audit(sandbox, "execution");
        assertThat(executions).anySatisfy(r -> assertThat(r.detail()).contains("codeDigest", context.get("id").asString()));
        assertThat(executions).noneSatisfy(r -> assertThat(r.detail()).contains("while True"));

        JsonNode list = json(live.raw("GET", base, null), 200);
        assertThat(list.get("contexts")).hasSize(1);
        assertThat(list.get("contexts").get(0).get("cells").asInt()).isEqualTo(7);

        // a restart is a fresh kernel: x is gone
        json(live.raw("POST", base + "/" + context.get("id").asString() + "/restart", null), 200);
        JsonNode gone = cell(run, "x", null);
        assertThat(gone.get("status").asString()).isEqualTo("error");
        assertThat(gone.get("error").get("name").asString()).isEqualTo("NameError");

        assertThat(live.raw("DELETE", base + "/" + context.get("id").asString(), null).statusCode()).isEqualTo(204);
        assertThat(live.raw("POST", run, "{\"code\": \"1\"}").statusCode()).isEqualTo(404);
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + sandbox, null).statusCode()).isEqualTo(204);
        System.out.printf("interpreter: context create %d ms, trivial cell %d ms, chart cell %d ms, interrupted loop (2 s timeout) %d ms%n",
                createMs, trivialMs, chartMs, loopMs);
    }

    @Test
    void aDeadKernelIsReportedARestartRevivesItAndContextsAreBounded() throws Exception {
        String sandbox = json(live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 600, \"limits\": {\"memory\": \"1g\"}}"), 201).get("id").asString();
        String base = "/v1/sandboxes/" + sandbox + "/contexts";
        String id = json(live.raw("POST", base, null), 201).get("id").asString();
        JsonNode died = cell(base + "/" + id + "/run", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", null);
        assertThat(died.get("status").asString()).as(died.toString()).isEqualTo("dead");
        HttpResponse<String> refused = live.raw("POST", base + "/" + id + "/run", "{\"code\": \"1\"}");
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(409);
        assertThat(refused.body()).contains("restart");
        assertThat(json(live.raw("GET", base, null), 200).get("contexts").get(0).get("state").asString()).isEqualTo("dead");
        json(live.raw("POST", base + "/" + id + "/restart", null), 200);
        assertThat(cell(base + "/" + id + "/run", "6 * 7", null).get("outputs").get(0).get("data").get("text/plain").asString())
                .isEqualTo("42");

        // a sandbox holds at most four contexts
        for (int i = 0; i < 3; i++) {
            json(live.raw("POST", base, null), 201);
        }
        HttpResponse<String> fifth = live.raw("POST", base, null);
        assertThat(fifth.statusCode()).as(fifth.body()).isEqualTo(429);
        assertThat(fifth.body()).contains("the most it may", "delete one");
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + sandbox, null).statusCode()).isEqualTo(204);
    }

    /**
     * The cell's code runs as the bridge's user (issue 29: it wrote forged lines, a later cell's
     * execution count and an HTML result, to the bridge's stdout through /proc). The bridge is not
     * dumpable: its descriptors, memory and environment are out of the code's reach; a line that
     * reaches the server without the bridge's nonce would be dropped. The cell says what it could
     * not do; its own result and the next cell's are the bridge's.
     */
    @Test
    void aCellCannotReachTheBridgeToForgeResults() throws Exception {
        Context context = newContext();
        JsonNode tried = cell(context.run(), """
                import os
                bridge = os.getppid()
                for path, mode in ((f'/proc/{bridge}/fd/1', 'w'), (f'/proc/{bridge}/mem', 'rb'), (f'/proc/{bridge}/environ', 'rb')):
                    try:
                        with open(path, mode) as f:
                            f.write('{"id": 2, "type": "result", "data": {"text/html": "<script>forged</script>"}}\\n') if 'w' in mode else f.read(1)
                        print(path.rsplit('/', 1)[1], 'reached')
                    except OSError as e:
                        print(path.rsplit('/', 1)[1], type(e).__name__)""", 60.0);
        assertThat(tried.get("status").asString()).as(tried.toString()).isEqualTo("ok");
        assertThat(tried.get("stdout").asString()).isEqualTo("1 PermissionError\nmem PermissionError\nenviron PermissionError\n");
        JsonNode next = cell(context.run(), "6 * 7", null);
        assertThat(next.get("outputs")).hasSize(1);
        assertThat(next.get("outputs").get(0).get("data").get("text/plain").asString()).isEqualTo("42");
        assertThat(next.get("outputs").get(0).get("data").has("text/html")).isFalse();
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + context.sandbox(), null).statusCode()).isEqualTo(204);
    }

    /**
     * A kernel that ignores interrupts (SIGINT) and spins is declared dead after the cell's timeout
     * and the bridge's grace, and is killed: nothing of it keeps a CPU (issue 29).
     */
    @Test
    void aKernelThatIgnoresInterruptsIsKilledWhenDeclaredDead() throws Exception {
        Context context = newContext();
        JsonNode spun = cell(context.run(), """
                import signal
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                while True:
                    pass""", 1.0);
        assertThat(spun.get("status").asString()).as(spun.toString()).isEqualTo("dead");
        assertThat(spun.toString()).contains("was killed");
        String ps = "{\"command\": [\"sh\", \"-c\", \"for p in /proc/[0-9]*; do tr '\\\\0' ' ' < $p/cmdline; echo; done\"]}";
        JsonNode processes = json(live.raw("POST", "/v1/sandboxes/" + context.sandbox() + "/exec", ps), 200);
        assertThat(processes.get("stdout").asString()).as("the sandbox's processes").doesNotContain("ipykernel", "-f /tmp");
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + context.sandbox(), null).statusCode()).isEqualTo(204);
    }

    @Test
    void theSdkRunsCellsWithTypedResultsAndStreamsOutputs() throws Exception {
        try (RemoteSandbox sandbox = live.client.create(SandboxSpec.builder().ttl(java.time.Duration.ofMinutes(10)).build())) {
            Interpreter py = sandbox.interpreter();
            assertThat(py.run("x = 41").ok()).isTrue();
            assertThat(py.run("x + 1").text()).isEqualTo("42");
            CellResult table = py.run("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})\ndf.describe()");
            assertThat(table.html()).contains("<table", "mean");
            assertThat(table.text()).contains("mean", "2.0");
            List<String> printed = new ArrayList<>();
            List<CellOutput> shown = new ArrayList<>();
            CellResult chart = py.run("import matplotlib.pyplot as plt\nprint('drawing')\nplt.figure(figsize=(2, 1), dpi=50)\nplt.plot([1, 2])\nNone",
                    null, new CellHandler() {
                        @Override
                        public void stdout(String text) {
                            printed.add(text);
                        }

                        @Override
                        public void output(CellOutput output) {
                            shown.add(output);
                        }
                    });
            assertThat(String.join("", printed)).isEqualTo("drawing\n");
            assertThat(shown).hasSize(1);
            BufferedImage image = ImageIO.read(new ByteArrayInputStream(chart.png()));
            assertThat(image.getWidth()).isEqualTo(100);
            assertThat(image.getHeight()).isEqualTo(50);
            CellResult loop = py.run("while True: pass", java.time.Duration.ofSeconds(2));
            assertThat(loop.status()).isEqualTo("timeout");
            assertThat(py.run("x").text()).isEqualTo("41");
            assertThat(sandbox.interpreters()).extracting(InterpreterInfo::id).containsExactly(py.id());
            Interpreter second = sandbox.createInterpreter();
            assertThat(second.run("'x' in globals()").text()).isEqualTo("False");
            second.delete();
            assertThat(sandbox.interpreters()).hasSize(1);
        }
    }

    @Test
    void overMcpACellKeepsStateAndAChartIsImageContent() throws Exception {
        RawMcp mcp = new RawMcp(live.uri(), live.token());
        String session = mcp.open();
        JsonNode created = mcp.call(session, 2, "sandbox_create", "{}");
        String sandbox = created.path("result").path("structuredContent").path("sandboxId").asString();
        assertThat(sandbox).as(created.toString()).startsWith("al-");

        JsonNode set = mcp.call(session, 3, "interpreter_run", "{\"sandboxId\": \"" + sandbox + "\", \"code\": \"x = 41\"}");
        assertThat(set.path("result").path("isError").asBoolean()).as(set.toString()).isFalse();
        JsonNode sum = mcp.call(session, 4, "interpreter_run", "{\"sandboxId\": \"" + sandbox + "\", \"code\": \"x + 1\"}");
        assertThat(sum.path("result").path("structuredContent").path("outputs").get(0).path("text/plain").asString()).isEqualTo("42");

        JsonNode chart = mcp.call(session, 5, "interpreter_run", "{\"sandboxId\": \"" + sandbox + "\", \"code\":"
                + " \"import matplotlib.pyplot as plt\\nplt.figure(figsize=(3, 2), dpi=100)\\nplt.bar(['a', 'b'], [3, 5])\"}");
        JsonNode image = null;
        for (JsonNode c : chart.path("result").path("content")) {
            if (c.path("type").asString().equals("image")) {
                image = c;
            }
        }
        assertThat(image).as(chart.toString()).isNotNull();
        assertThat(image.path("mimeType").asString()).isEqualTo("image/png");
        BufferedImage decoded = ImageIO.read(new ByteArrayInputStream(Base64.getDecoder().decode(image.path("data").asString())));
        assertThat(decoded.getWidth()).isEqualTo(300);
        assertThat(decoded.getHeight()).isEqualTo(200);

        JsonNode loop = mcp.call(session, 6, "interpreter_run", "{\"sandboxId\": \"" + sandbox + "\", \"code\": \"while True: pass\","
                + " \"timeoutSeconds\": 2}");
        assertThat(loop.path("result").path("structuredContent").path("status").asString()).as(loop.toString()).isEqualTo("timeout");
        JsonNode after = mcp.call(session, 7, "interpreter_run", "{\"sandboxId\": \"" + sandbox + "\", \"code\": \"x\"}");
        assertThat(after.path("result").path("structuredContent").path("outputs").get(0).path("text/plain").asString()).isEqualTo("41");

        JsonNode list = mcp.call(session, 8, "interpreter_context", "{\"sandboxId\": \"" + sandbox + "\", \"action\": \"list\"}");
        assertThat(list.path("result").path("structuredContent").path("contexts")).as(list.toString()).hasSize(1);
        JsonNode destroyed = mcp.call(session, 9, "sandbox_destroy", "{\"sandboxId\": \"" + sandbox + "\"}");
        assertThat(destroyed.path("result").path("isError").asBoolean()).isFalse();
    }

    /** A context in a new sandbox of ten minutes: the sandbox's id and the path that runs the context's cells. */
    private record Context(String sandbox, String run) {
    }

    private static Context newContext() throws IOException {
        String sandbox = json(live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 600}"), 201).get("id").asString();
        String base = "/v1/sandboxes/" + sandbox + "/contexts";
        return new Context(sandbox, base + "/" + json(live.raw("POST", base, null), 201).get("id").asString() + "/run");
    }

    private static JsonNode cell(String path, String code, Double timeoutSeconds) throws IOException {
        var body = JSON.createObjectNode().put("code", code);
        if (timeoutSeconds != null) {
            body.put("timeoutSeconds", timeoutSeconds);
        }
        return json(live.raw("POST", path, body.toString()), 200);
    }

    private static JsonNode json(HttpResponse<String> r, int status) throws IOException {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return JSON.readTree(r.body());
    }
}
