package dev.airlock.client;

import com.sun.net.httpserver.HttpExchange;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class ExecTest {

    static final String ID = SandboxLifecycleTest.ID;
    static final String EXEC = "/v1/sandboxes/" + ID + "/exec";
    static final String RESULT = """
            {"stdout": "1\\n", "stderr": "warn\\n", "exitCode": 0, "endReason": "exited", "timedOut": false,
             "oomKilled": false, "truncated": false, "durationMs": 12, "message": null}""";

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
    void execSendsTheCommandAndMapsTheResult() {
        server.reply("POST", EXEC, 200, RESULT);

        ExecResult r = sandbox.exec("python3", "-c", "print(1)");

        assertThat(server.last().bodyText()).isEqualTo("{\"command\":[\"python3\",\"-c\",\"print(1)\"]}");
        assertThat(r).isEqualTo(new ExecResult("1\n", "warn\n", 0, EndReason.EXITED, false, false, false, Duration.ofMillis(12), null));
        assertThat(r.succeeded()).isTrue();
    }

    @Test
    void runSendsLanguageAndCode() {
        server.reply("POST", EXEC, 200, RESULT);

        sandbox.run(Language.PYTHON, "print(2)");

        assertThat(server.last().bodyText()).isEqualTo("{\"language\":\"python\",\"code\":\"print(2)\"}");
    }

    @Test
    void execOptionsUseTheContractNamesAndTextStdinStaysText() {
        server.reply("POST", EXEC, 200, RESULT);

        sandbox.exec(Exec.command("sort").cwd("/workspace").env("K", "v").stdin("b\na\n").timeout(Duration.ofMillis(1500)));

        assertThat(server.last().bodyText()).isEqualTo(
                "{\"command\":[\"sort\"],\"cwd\":\"/workspace\",\"env\":{\"K\":\"v\"},\"stdin\":\"b\\na\\n\",\"timeoutSeconds\":1.5}");
    }

    @Test
    void binaryStdinIsSentAsBase64() {
        server.reply("POST", EXEC, 200, RESULT);

        sandbox.exec(Exec.command("xxd").stdin(new byte[] {(byte) 0xff, 0, 1}));

        assertThat(server.last().bodyText()).isEqualTo("{\"command\":[\"xxd\"],\"stdinBase64\":\"/wAB\"}");
    }

    @Test
    void aTimedOutResultIsAResultNotAnException() {
        server.reply("POST", EXEC, 200, """
                {"stdout": "", "stderr": "", "exitCode": 137, "endReason": "timed_out", "timedOut": true,
                 "oomKilled": false, "truncated": true, "durationMs": 10000, "message": "killed after 10 s"}""");

        ExecResult r = sandbox.exec("sleep", "100");

        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.timedOut()).isTrue();
        assertThat(r.truncated()).isTrue();
        assertThat(r.duration()).isEqualTo(Duration.ofSeconds(10));
        assertThat(r.message()).isEqualTo("killed after 10 s");
        assertThat(r.succeeded()).isFalse();
    }

    @Test
    void anEndReasonFromANewerServerIsUnknownNotAFailure() {
        server.reply("POST", EXEC, 200, RESULT.replace("\"exited\"", "\"frozen\""));

        assertThat(sandbox.exec("true").endReason()).isEqualTo(EndReason.UNKNOWN);
    }

    @Test
    void streamingDeliversEachChunkBeforeTheProcessEnds() throws Exception {
        CountDownLatch firstChunkSeen = new CountDownLatch(1);
        AtomicReference<Boolean> serverWaited = new AtomicReference<>();
        server.on("POST", EXEC, ex -> {
            OutputStream out = startNdjson(ex);
            line(out, "{\"type\":\"stdout\",\"data\":\"1\\n\"}");
            // the rest only once the client has shown the first chunk to its caller
            serverWaited.set(firstChunkSeen.await(10, TimeUnit.SECONDS));
            line(out, "{\"type\":\"stderr\",\"data\":\"oops\\n\"}");
            line(out, "{\"type\":\"stdout\",\"data\":\"2\\n\"}");
            line(out, "{\"type\":\"result\"," + RESULT.substring(1).replace("\n", " ").replace("1\\n", "1\\n2\\n"));
            out.close();
        });
        List<String> events = new ArrayList<>();

        ExecResult r = sandbox.exec(Exec.command("sh", "-c", "echo 1; echo oops >&2; echo 2"), new OutputHandler() {
            @Override
            public void stdout(String s) {
                events.add("out:" + s);
                firstChunkSeen.countDown();
            }

            @Override
            public void stderr(String s) {
                events.add("err:" + s);
            }
        });

        assertThat(serverWaited.get()).as("the first chunk reached the handler while the server held the rest").isTrue();
        assertThat(events).containsExactly("out:1\n", "err:oops\n", "out:2\n");
        assertThat(r.stdout()).isEqualTo("1\n2\n");
        assertThat(r.exitCode()).isZero();
        assertThat(server.last().header("Accept")).isEqualTo("application/x-ndjson");
    }

    @Test
    void aStreamedResultWithoutOutputFieldsTakesTheOutputFromTheChunks() {
        server.on("POST", EXEC, ex -> {
            OutputStream out = startNdjson(ex);
            line(out, "{\"type\":\"stdout\",\"data\":\"a\"}");
            line(out, "{\"type\":\"stdout\",\"data\":\"b\"}");
            line(out, "{\"type\":\"result\",\"exitCode\":3,\"endReason\":\"exited\",\"durationMs\":5}");
            out.close();
        });

        ExecResult r = sandbox.exec(Exec.command("x"), OutputHandler.of(s -> { }, s -> { }));

        assertThat(r.stdout()).isEqualTo("ab");
        assertThat(r.exitCode()).isEqualTo(3);
    }

    @Test
    void aStreamThatEndsWithoutAResultIsAServerException() {
        server.on("POST", EXEC, ex -> {
            OutputStream out = startNdjson(ex);
            line(out, "{\"type\":\"stdout\",\"data\":\"a\"}");
            out.close();
        });

        assertThatThrownBy(() -> sandbox.exec(Exec.command("x"), new OutputHandler() { }))
                .isInstanceOf(ServerException.class)
                .hasMessageContaining("the stream ended before its result line");
    }

    @Test
    void anErrorLineInTheStreamBecomesTheTypedException() {
        server.on("POST", EXEC, ex -> {
            OutputStream out = startNdjson(ex);
            line(out, "{\"type\":\"error\",\"error\":{\"code\":\"unavailable\",\"message\":\"shutting down\"}}");
            out.close();
        });

        assertThatThrownBy(() -> sandbox.exec(Exec.command("x"), new OutputHandler() { }))
                .isInstanceOf(UnavailableException.class)
                .hasMessageContaining("shutting down");
    }

    @Test
    void aRefusalInTheStreamNamesItsControlAndRule() {
        server.on("POST", EXEC, ex -> {
            OutputStream out = startNdjson(ex);
            line(out, "{\"type\":\"error\",\"error\":{\"code\":\"quota_exceeded\",\"message\":\"3 executions in the last minute\","
                    + "\"control\":\"quota\",\"rule\":\"clients.burst.quotas.executionsPerMinute\"}}");
            out.close();
        });

        QuotaExceededException e = catchThrowableOfType(QuotaExceededException.class,
                () -> sandbox.exec(Exec.command("x"), new OutputHandler() { }));

        assertThat(e.control()).isEqualTo("quota");
        assertThat(e.rule()).isEqualTo("clients.burst.quotas.executionsPerMinute");
        assertThat(e.getMessage()).endsWith("[refused by quota: clients.burst.quotas.executionsPerMinute]");
    }

    @Test
    void anErrorStatusBeforeTheStreamIsTheTypedException() {
        server.reply("POST", EXEC, 429, FakeAirlock.error("quota_exceeded", "too many running processes: 64"));

        assertThatThrownBy(() -> sandbox.exec(Exec.command("x"), new OutputHandler() { }))
                .isInstanceOf(QuotaExceededException.class)
                .hasMessageContaining("too many running processes");
    }

    @Test
    void interruptingTheCallerBlockedOnASilentProcessClosesTheStream() throws Exception {
        CountDownLatch clientGone = new CountDownLatch(1);
        CountDownLatch silence = new CountDownLatch(1);
        server.on("POST", EXEC, ex -> {
            OutputStream out = startNdjson(ex);
            try {
                line(out, "{\"type\":\"stdout\",\"data\":\"started\\n\"}");
                // the process says nothing more: the client is blocked in a read when interrupted
                silence.await(10, TimeUnit.SECONDS);
                for (int i = 0; i < 400; i++) {
                    line(out, "{\"type\":\"stdout\",\"data\":\"" + i + "\\n\"}");
                    Thread.sleep(25);
                }
            } catch (IOException e) {
                clientGone.countDown();
            }
        });
        CountDownLatch firstChunk = new CountDownLatch(1);
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
        Thread caller = new Thread(() -> {
            try {
                sandbox.exec(Exec.command("yes"), OutputHandler.of(s -> firstChunk.countDown(), s -> { }));
            } catch (Throwable t) {
                thrown.set(t);
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }
        });
        caller.start();
        assertThat(firstChunk.await(10, TimeUnit.SECONDS)).isTrue();

        caller.interrupt();
        caller.join(5_000);

        boolean returnedPromptly = !caller.isAlive();
        silence.countDown();
        assertThat(returnedPromptly).as("the caller returned promptly").isTrue();
        assertThat(thrown.get()).isInstanceOf(AirlockInterruptedException.class);
        assertThat(stillInterrupted.get()).as("the interrupt flag is kept").isTrue();
        assertThat(clientGone.await(10, TimeUnit.SECONDS)).as("the server saw the connection closed").isTrue();
    }

    @Test
    void aHandlerThatThrowsStopsTheExecutionAndClosesTheStream() throws Exception {
        CountDownLatch clientGone = new CountDownLatch(1);
        server.on("POST", EXEC, ex -> {
            OutputStream out = startNdjson(ex);
            try {
                for (int i = 0; i < 400; i++) {
                    line(out, "{\"type\":\"stdout\",\"data\":\"x\"}");
                    Thread.sleep(25);
                }
            } catch (IOException e) {
                clientGone.countDown();
            }
        });

        assertThatThrownBy(() -> sandbox.exec(Exec.command("yes"), OutputHandler.of(s -> {
            throw new IllegalStateException("seen enough");
        }, s -> { }))).isInstanceOf(IllegalStateException.class).hasMessage("seen enough");
        assertThat(clientGone.await(10, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void backgroundProcessesCanBeStartedPolledSignalledAndKilled() {
        String process = "{\"id\": \"p-3\", \"command\": [\"sleep\", \"100\"], \"state\": \"running\", "
                + "\"startedAt\": \"2026-11-29T21:00:00Z\", \"result\": null}";
        String ended = process.replace("\"running\"", "\"exited\"").replace("\"result\": null", "\"result\": " + RESULT);
        server.reply("POST", EXEC, 202, process);
        server.reply("GET", "/v1/sandboxes/" + ID + "/processes/p-3", 200, ended);
        server.reply("POST", "/v1/sandboxes/" + ID + "/processes/p-3/signal", 202, null);
        server.reply("DELETE", "/v1/sandboxes/" + ID + "/processes/p-3", 204, null);
        server.reply("GET", "/v1/sandboxes/" + ID + "/processes", 200, "{\"processes\": [" + process + "]}");

        BackgroundProcess p = sandbox.start(Exec.command("sleep", "100"));
        assertThat(server.last().bodyText()).isEqualTo("{\"command\":[\"sleep\",\"100\"],\"background\":true}");
        assertThat(p.id()).isEqualTo("p-3");
        assertThat(p.isRunning()).isTrue();
        assertThat(p.result()).isEmpty();

        p.signal(15);
        assertThat(server.last().bodyText()).isEqualTo("{\"signal\":15}");
        p.kill();
        assertThat(server.last().method()).isEqualTo("DELETE");

        assertThat(p.refresh().isRunning()).isFalse();
        assertThat(p.result()).hasValueSatisfying(r -> assertThat(r.stdout()).isEqualTo("1\n"));
        assertThat(p.waitFor(Duration.ofSeconds(1))).isPresent();
        assertThat(sandbox.processes()).extracting(BackgroundProcess::id).containsExactly("p-3");
        assertThat(sandbox.process("p-3").state()).isEqualTo("exited");
    }

    private static OutputStream startNdjson(HttpExchange ex) throws IOException {
        ex.getResponseHeaders().set("Content-Type", "application/x-ndjson");
        ex.sendResponseHeaders(200, 0);
        return ex.getResponseBody();
    }

    private static void line(OutputStream out, String json) throws IOException {
        out.write((json + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
