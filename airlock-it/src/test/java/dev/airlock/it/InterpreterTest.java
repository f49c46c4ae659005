package dev.airlock.it;

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
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Interpreter contexts over REST against a real server and real sandboxes of the {@code system}
 * image (the host's /usr with Debian's python3-ipykernel, -matplotlib and -pandas, which bin/test
 * installs): state persists between cells, a chart comes back as a PNG of its figure's pixel size,
 * a DataFrame as HTML and text, and an endless loop is interrupted at its timeout with the context
 * still usable. Prints what a context, a trivial cell and a chart cost.
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
    void aDeadKernelIsReportedAndARestartRevivesIt() throws Exception {
        String sandbox = json(live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 600}"), 201).get("id").asString();
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
        assertThat(live.raw("DELETE", "/v1/sandboxes/" + sandbox, null).statusCode()).isEqualTo(204);
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
