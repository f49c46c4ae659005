package dev.airlock.it;

import dev.airlock.client.EndReason;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.Language;
import dev.airlock.client.OutputHandler;
import dev.airlock.client.RemoteSandbox;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Output streamed while the process runs (NDJSON), through the SDK's OutputHandler. */
class ServerStreamingTest {

    private static LiveServer live;
    private static RemoteSandbox sandbox;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(1));
        sandbox = live.client.create();
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    /**
     * The process writes a first line and then blocks until a file exists; the test creates that
     * file only after the first chunk reached the handler. So the chunk can only have come while
     * the process was still running: had the server buffered output to the end, the process would
     * never be released (it would time out instead).
     */
    @Test
    void firstChunkArrivesWhileTheProcessIsStillBlocked() throws Exception {
        String gate = "/workspace/gate-" + System.nanoTime();
        String code = """
                import os, sys, time
                print("first", flush=True)
                while not os.path.exists("%s"):
                    time.sleep(0.02)
                print("second", flush=True)
                """.formatted(gate);
        CountDownLatch firstChunk = new CountDownLatch(1);
        List<String> chunks = new CopyOnWriteArrayList<>();
        CompletableFuture<ExecResult> exec = CompletableFuture.supplyAsync(
                () -> sandbox.exec(Exec.code(Language.PYTHON, code).timeout(Duration.ofSeconds(30)), new OutputHandler() {
                    @Override
                    public void stdout(String chunk) {
                        chunks.add(chunk);
                        firstChunk.countDown();
                    }
                }),
                r -> Thread.ofVirtual().start(r));

        assertThat(firstChunk.await(30, TimeUnit.SECONDS)).as("a first chunk arrived").isTrue();
        assertThat(exec).as("the execution has not returned when its first chunk arrives").isNotDone();
        assertThat(String.join("", chunks)).isEqualTo("first\n");

        sandbox.files().write(gate, new byte[0]);
        ExecResult r = exec.get(60, TimeUnit.SECONDS);
        assertThat(r.endReason()).as("the process was released by the gate file, not by its timeout").isEqualTo(EndReason.EXITED);
        assertThat(r.stdout()).isEqualTo("first\nsecond\n");
        assertThat(String.join("", chunks)).isEqualTo("first\nsecond\n");
    }

    @Test
    void stdoutAndStderrArriveSeparately() {
        StringBuilder out = new StringBuilder();
        StringBuilder err = new StringBuilder();
        ExecResult r = sandbox.exec(Exec.command("sh", "-c", "echo out1; echo err1 >&2; echo out2; echo err2 >&2; exit 5"),
                OutputHandler.of(out::append, err::append));
        assertThat(out.toString()).isEqualTo("out1\nout2\n");
        assertThat(err.toString()).isEqualTo("err1\nerr2\n");
        assertThat(r.stdout()).isEqualTo("out1\nout2\n");
        assertThat(r.stderr()).isEqualTo("err1\nerr2\n");
        assertThat(r.exitCode()).isEqualTo(5);
        assertThat(r.endReason()).isEqualTo(EndReason.EXITED);
    }

    @Test
    void multiByteCharacterSplitAcrossChunksArrivesIntact() {
        List<String> chunks = new CopyOnWriteArrayList<>();
        List<String> errChunks = new CopyOnWriteArrayList<>();
        ExecResult r = sandbox.run(Language.PYTHON, """
                import sys, time
                for stream in (sys.stdout.buffer, sys.stderr.buffer):
                    stream.write(b"price: \\xe2\\x82"); stream.flush()
                    time.sleep(0.3)
                    stream.write(b"\\xac!"); stream.flush()
                """, OutputHandler.of(chunks::add, errChunks::add));
        assertThat(String.join("", chunks)).isEqualTo("price: €!");
        assertThat(String.join("", errChunks)).isEqualTo("price: €!");
        assertThat(chunks).noneMatch(c -> c.contains("\uFFFD"));
        assertThat(errChunks).noneMatch(c -> c.contains("\uFFFD"));
        assertThat(r.stdout()).isEqualTo("price: €!");
        assertThat(r.stderr()).isEqualTo("price: €!");
    }

    @Test
    void streamedTimeoutStillEndsWithTheResultAndEarlierOutput() {
        StringBuilder out = new StringBuilder();
        ExecResult r = sandbox.exec(Exec.command("sh", "-c", "echo begun; sleep 60").timeout(Duration.ofSeconds(1)),
                OutputHandler.of(out::append, e -> { }));
        assertThat(out.toString()).isEqualTo("begun\n");
        assertThat(r.timedOut()).isTrue();
        assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);
        assertThat(r.stdout()).isEqualTo("begun\n");
    }

    /** Whether a process whose command line contains {@code marker} runs in the sandbox. */
    private static boolean runs(String marker) {
        return sandbox.exec("sh", "-c", "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout().contains(marker);
    }

    @Test
    void handlerThatThrowsAbandonsTheRequestAndTheServerKillsTheProcess() {
        RuntimeException stop = new RuntimeException("enough");
        Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(() -> sandbox.exec(
                Exec.command("sh", "-c", "while :; do echo tick; sleep 0.2; done # chatty-123457"), new OutputHandler() {
                    @Override
                    public void stdout(String chunk) {
                        throw stop;
                    }
                }));
        assertThat(thrown).isSameAs(stop);
        await().atMost(Duration.ofSeconds(20)).until(() -> !runs("chatty-123457"));
    }

    /**
     * The server notices an abandoned request only when it next writes to it. A process that writes
     * nothing after the client left runs on until its timeout (the default, 30 s, here; up to 24 h
     * if the sandbox allows), although docs/rest-api.md says it is killed. The same holds for the
     * plain (non-streamed) exec, which writes nothing until the end.
     */
    @Test
    void abandonedRequestKillsAProcessThatWritesNothingMore() {
        RuntimeException stop = new RuntimeException("enough");
        Throwable thrown = org.assertj.core.api.Assertions.catchThrowable(() -> sandbox.exec(
                Exec.command("sh", "-c", "echo started; sleep 987654"), new OutputHandler() {
                    @Override
                    public void stdout(String chunk) {
                        throw stop;
                    }
                }));
        assertThat(thrown).isSameAs(stop);
        await().atMost(Duration.ofSeconds(20)).until(() -> !runs("987654"));
    }

    @Test
    void destroyingTheSandboxEndsAStreamedExecutionInIt() throws Exception {
        RemoteSandbox doomed = live.client.create(dev.airlock.client.SandboxSpec.builder().label("doomed", "yes").build());
        CountDownLatch started = new CountDownLatch(1);
        CompletableFuture<Object> exec = CompletableFuture.supplyAsync(() -> {
            try {
                return doomed.exec(Exec.command("sh", "-c", "echo started; sleep 1000"), OutputHandler.of(c -> started.countDown(), c -> { }));
            } catch (RuntimeException e) {
                return e;
            }
        }, r -> Thread.ofVirtual().start(r));
        assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();
        doomed.close();
        Object outcome = exec.get(60, TimeUnit.SECONDS);
        assertThat(outcome).isInstanceOf(ExecResult.class);
        ExecResult r = (ExecResult) outcome;
        assertThat(r.endReason()).isEqualTo(EndReason.CANCELLED);
        assertThat(r.stdout()).isEqualTo("started\n");
    }

    @Test
    void incompleteCharacterAtTheEndOfTheOutputIsReplacedAlikeInChunksAndResult() {
        StringBuilder chunks = new StringBuilder();
        ExecResult r = sandbox.run(Language.PYTHON, "import sys; sys.stdout.buffer.write(b'ok\\xe2\\x82')",
                OutputHandler.of(chunks::append, e -> { }));
        assertThat(r.stdout()).startsWith("ok").contains("\uFFFD");
        assertThat(chunks.toString()).isEqualTo(r.stdout());
    }
}
