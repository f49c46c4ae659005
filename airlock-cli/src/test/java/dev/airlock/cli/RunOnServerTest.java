package dev.airlock.cli;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code airlock run --server}: a real CLI process asking a real server (this JVM's) over its REST
 * API, the server's warm pool taking the code.
 */
class RunOnServerTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @TempDir
    static Path dir;
    private static AirlockServer server;
    private static Path token;

    @BeforeAll
    static void startServer() {
        server = AirlockServer.start(ServerConfig.defaults().withPort(0).withE2bPort(ServerConfig.E2B_OFF).withDataDir(dir.resolve("data"))
                .withPoolSize(1));
        token = dir.resolve("data").resolve("token");
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
        assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty();
    }

    @AfterEach
    void theServerHoldsNoSandboxOfARun() {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(get("/v1/sandboxes").path("sandboxes")).isEmpty());
    }

    private static CliProcess run(String... args) throws Exception {
        List<String> argv = new ArrayList<>(List.of("run", "--server", "--url", server.uri().toString(), "--token-file", token.toString()));
        argv.addAll(List.of(args));
        return CliProcess.run(argv.toArray(String[]::new));
    }

    private static JsonNode get(String path) throws Exception {
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(server.uri().resolve(path))
                    .header("Authorization", "Bearer " + server.token()).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            return JSON.readTree(r.body());
        }
    }

    @Test
    void theServerRunsTheCodeAndTheCliPrintsItsOutputAndExitsWithItsCode() throws Exception {
        CliProcess cli = run("--lang", "python", "--code",
                "import sys; print(input() + ' to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)", "--stdin", "hello");
        assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(3);
        assertThat(cli.stdout()).isEqualTo("hello to stdout\n");
        assertThat(cli.stderr()).isEqualTo("to stderr\n");
        // the server's audit log holds the run, made by the client whose token the CLI presented
        assertThat(server.audit().flush(10_000)).isTrue();
        JsonNode records = get("/v1/audit?q=" + java.net.URLEncoder.encode("/v1/run", java.nio.charset.StandardCharsets.UTF_8));
        assertThat(records.toString()).contains("POST /v1/run").contains("local");
    }

    /**
     * The request is JSON the CLI writes itself: code holding every kind of character JSON escapes
     * (a quotation mark, a backslash, a tab, a newline, a carriage return, other control characters)
     * and characters beyond ASCII reaches the interpreter as it was given.
     */
    @Test
    void codeWithQuotesBackslashesControlCharactersAndNonAsciiArrivesIntact() throws Exception {
        String literal = "\t|\u0001\u001f\u0007|\\\"|é 😀";   // in the Python string: a tab, three controls, \" (a quote), é, an emoji
        Path file = dir.resolve("escapes.py");   // a file, read as UTF-8: an argument's characters would depend on the locale
        Files.writeString(file, "import sys\r\ns = \"" + literal + "\"\nsys.stdout.write(s)");
        CliProcess cli = run("--lang", "python", "--file", file.toString());
        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        assertThat(cli.stdout()).isEqualTo("\t|\u0001\u001f\u0007|\"|é 😀");
    }

    @Test
    void aTimeoutEndsWith124AndTheServersSentence() throws Exception {
        CliProcess cli = run("--lang", "sh", "--code", "sleep 30", "--timeout", "1");
        assertThat(cli.exitCode()).isEqualTo(RunCommand.EXIT_TIMED_OUT);
        assertThat(cli.stderr()).startsWith("airlock: ").contains("timed out");
    }

    @Test
    void jsonPrintsTheServersAnswer() throws Exception {
        CliProcess cli = run("--lang", "python", "--code", "print(6 * 7)", "--json");
        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        JsonNode n = JSON.readTree(cli.stdout());
        assertThat(n.path("stdout").asString()).isEqualTo("42\n");
        assertThat(n.path("endReason").asString()).isEqualTo("exited");
        assertThat(n.path("outputs").isArray()).isTrue();
    }

    @Test
    void optionsThatSetUpASandboxHereAreRefusedWithTheServerAndServerOptionsWithoutIt() throws Exception {
        CliProcess local = run("--lang", "python", "--code", "pass", "--memory", "1g", "--env", "A=b", "--runtime", "runc");
        assertThat(local.exitCode()).isEqualTo(AirlockCli.EXIT_USAGE);
        assertThat(local.stderr()).isEqualTo("airlock: with --server the server makes the sandbox, as its policy's profile for the client"
                + " says, so these options do not apply: --memory, --runtime, --env; leave them out, or run here without --server\n");

        CliProcess remote = CliProcess.run("run", "--url", server.uri().toString(), "--lang", "python", "--code", "pass");
        assertThat(remote.exitCode()).isEqualTo(AirlockCli.EXIT_USAGE);
        assertThat(remote.stderr()).isEqualTo("airlock: these options name the server that --server runs on: --url; give --server too,"
                + " or leave them out to run here\n");
    }

    @Test
    void aTokenTheServerDoesNotKnowIsRefusedByTheServer() throws Exception {
        Path other = dir.resolve("other-token");
        Files.writeString(other, "alk_" + "x".repeat(40));
        Files.setPosixFilePermissions(other, PosixFilePermissions.fromString("rw-------"));
        CliProcess cli = CliProcess.run("run", "--server", "--url", server.uri().toString(), "--token-file", other.toString(),
                "--lang", "python", "--code", "pass");
        assertThat(cli.exitCode()).isEqualTo(AirlockCli.EXIT_USAGE);
        assertThat(cli.stderr()).startsWith("airlock: ").containsIgnoringCase("token").doesNotContain("null");
    }

    /** Ctrl-C ends the CLI and its connection: the server cancels the run and destroys its sandbox (checked after each test). */
    @Test
    void aCliThatIsInterruptedTakesItsRunOnTheServerWithIt() throws Exception {
        List<String> argv = new ArrayList<>(List.of("run", "--server", "--url", server.uri().toString(), "--token-file", token.toString(),
                "--lang", "sh", "--code", "sleep 1000", "--timeout", "600"));
        CliProcess cli = CliProcess.start(argv.toArray(String[]::new));
        await().atMost(Duration.ofSeconds(30)).until(() -> !get("/v1/sandboxes").path("sandboxes").isEmpty());
        Thread.sleep(500);   // the run's exec has begun: its timeout (600 s) is not what ends it within the 30 s checked after
        String signal = cli.interrupt();
        assertThat(cli.await()).as("the CLI's exit after SIG" + signal).isEqualTo(signal.equals("INT") ? 130 : 143);
    }

    @Test
    void aServerThatIsNotThereIsOneSentence() throws Exception {
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0)) {
            port = free.getLocalPort();
        }
        CliProcess cli = CliProcess.run("run", "--server", "--url", "http://127.0.0.1:" + port, "--token-file", token.toString(),
                "--lang", "python", "--code", "pass");
        assertThat(cli.exitCode()).isEqualTo(AirlockCli.EXIT_UNAVAILABLE);
        assertThat(cli.stderr()).startsWith("airlock: cannot reach the server at http://127.0.0.1:" + port + ": ")
                .contains("airlock serve").doesNotContain("null");
    }
}
