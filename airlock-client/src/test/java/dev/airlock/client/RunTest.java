package dev.airlock.client;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link Airlock#run(Run)}: the body of {@code POST /v1/run} and the reading of its answer. */
class RunTest {

    static final String ANSWER = """
            {"stdout": "hi\\n", "stderr": "", "exitCode": 0, "endReason": "exited", "timedOut": false,
             "oomKilled": false, "truncated": false, "durationMs": 40, "message": null,
             "outputs": [{"path": "/workspace/output/result.txt", "size": 3, "contentBase64": "%s"},
                         {"path": "/workspace/output/big.bin", "size": 2000000, "notReturned": "not returned: larger than 1 MiB"}]}"""
            .formatted(Base64.getEncoder().encodeToString("42\n".getBytes(StandardCharsets.UTF_8)));

    FakeAirlock server;
    Airlock airlock;

    @BeforeEach
    void start() throws IOException {
        server = new FakeAirlock();
        airlock = server.client();
    }

    @AfterEach
    void stop() {
        airlock.close();
        server.close();
    }

    @Test
    void runSendsLanguageAndCodeAndMapsResultAndOutputs() {
        server.reply("POST", "/v1/run", 200, ANSWER);

        RunResult r = airlock.run(Language.PYTHON, "print('hi')");

        assertThat(server.last().bodyText()).isEqualTo("{\"language\":\"python\",\"code\":\"print('hi')\"}");
        assertThat(r.execution()).isEqualTo(new ExecResult("hi\n", "", 0, EndReason.EXITED, false, false, false, Duration.ofMillis(40), null));
        assertThat(r.succeeded()).isTrue();
        assertThat(r.stdout()).isEqualTo("hi\n");
        assertThat(r.outputs()).hasSize(2);
        RunResult.Output text = r.output("/workspace/output/result.txt").orElseThrow();
        assertThat(text.returned()).isTrue();
        assertThat(text.text()).isEqualTo("42\n");
        assertThat(text.size()).isEqualTo(3);
        RunResult.Output big = r.outputs().get(1);
        assertThat(big.returned()).isFalse();
        assertThat(big.content()).isNull();
        assertThat(big.size()).isEqualTo(2_000_000);
        assertThat(big.notReturned()).contains("larger than 1 MiB");
    }

    @Test
    void optionsUseTheContractNamesAndBinaryStdinGoesAsBase64() {
        server.reply("POST", "/v1/run", 200, ANSWER);

        airlock.run(Run.code(Language.BASH, "cat data.txt").file("data.txt", "a\n").file("/tmp/b", "b")
                .stdin(new byte[]{(byte) 0xff}).timeout(Duration.ofMillis(2500)));

        assertThat(server.last().bodyText()).isEqualTo("{\"language\":\"bash\",\"code\":\"cat data.txt\",\"stdinBase64\":\"/w==\","
                + "\"files\":{\"data.txt\":\"a\\n\",\"/tmp/b\":\"b\"},\"timeoutSeconds\":2.5}");
    }

    @Test
    void runIsImmutableAndChecksItsArguments() {
        Run base = Run.code(Language.PYTHON, "print(1)");
        Run withFile = base.file("a.txt", "x");
        assertThat(base.files()).isEmpty();
        assertThat(withFile.files()).containsEntry("a.txt", "x");
        assertThatThrownBy(() -> withFile.files().put("b", "y")).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> base.file("", "x")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("path is empty");
        assertThatThrownBy(() -> base.timeout(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("positive");
        assertThat(base.stdin("x")).isEqualTo(base.stdin("x".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void aRefusalIsAForbiddenException() {
        server.reply("POST", "/v1/run", 403, FakeAirlock.error("forbidden", "operation run is not granted to client agent"));

        assertThatThrownBy(() -> airlock.run(Language.PYTHON, "print(1)"))
                .isInstanceOf(ForbiddenException.class).hasMessageContaining("operation run is not granted");
    }

    @Test
    void anOutputWithNeitherContentNorReasonIsAServerException() {
        server.reply("POST", "/v1/run", 200, """
                {"stdout": "", "stderr": "", "exitCode": 0, "endReason": "exited", "durationMs": 1,
                 "outputs": [{"path": "/workspace/output/x", "size": 1}]}""");

        assertThatThrownBy(() -> airlock.run(Language.PYTHON, "print(1)"))
                .isInstanceOf(ServerException.class).hasMessageContaining("notReturned");
    }

    @Test
    void outputContentThatIsNotBase64IsAServerException() {
        server.reply("POST", "/v1/run", 200, """
                {"stdout": "", "stderr": "", "exitCode": 0, "endReason": "exited", "durationMs": 1,
                 "outputs": [{"path": "/workspace/output/x", "size": 1, "contentBase64": "!!"}]}""");

        assertThatThrownBy(() -> airlock.run(Language.PYTHON, "print(1)"))
                .isInstanceOf(ServerException.class).hasMessageContaining("not base64");
    }
}
