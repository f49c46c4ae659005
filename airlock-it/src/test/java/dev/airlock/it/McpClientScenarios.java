package dev.airlock.it;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a real MCP client (the official TypeScript SDK, through src/test/node/mcp-client.mjs) sees
 * of Airlock's tools, the same over every transport. The client also checks each result's
 * structuredContent against the tool's outputSchema, so a mismatch fails the scenario.
 */
abstract class McpClientScenarios {

    static final String[] SCENARIOS = {"listTools", "languages", "runWithInput", "session", "image", "chart", "timeout", "failure",
            "badArguments", "streaming", "abort", "interpreter", "snapshotFork"};

    /** The client's report: one entry per scenario. */
    abstract JsonNode report();

    JsonNode scenario(String name) {
        JsonNode n = report().get(name);
        assertThat(n).as("scenario %s ran", name).isNotNull();
        assertThat(n.has("error")).as("scenario %s failed: %s", name, n.path("error").asString("")).isFalse();
        return n;
    }

    @Test
    void listsTheToolsWithSchemasAndDescriptionsForAModel() {
        List<String> names = new ArrayList<>();
        for (JsonNode t : scenario("listTools")) {
            names.add(t.get("name").asString());
            assertThat(t.get("hasOutputSchema").asBoolean()).as(t.get("name").asString()).isTrue();
        }
        assertThat(names).containsExactly("run_code", "sandbox_create", "sandbox_exec", "interpreter_run", "interpreter_context", "sandbox_write_file",
                "sandbox_read_file", "sandbox_list_files", "sandbox_destroy", "sandbox_snapshot", "sandbox_fork", "sandbox_list");
        JsonNode runCode = scenario("listTools").get(0);
        assertThat(runCode.get("description").asString()).contains("no network access", "/workspace/output", "destroyed afterwards");
        assertThat(runCode.get("required").toString()).contains("language", "code");
        assertThat(scenario("listTools").get(1).get("description").asString()).contains("Files are discarded when the sandbox is destroyed");
    }

    @Test
    void runsCodeInEveryLanguage() {
        JsonNode languages = scenario("languages");
        for (String language : List.of("python", "javascript", "bash", "sh", "java")) {
            JsonNode r = languages.get(language);
            assertThat(r.get("isError").asBoolean()).as(language + ": " + r).isFalse();
            assertThat(r.at("/structured/stdout").asString()).as(language).isEqualTo("42\n");
            assertThat(r.at("/structured/exitCode").asInt()).isZero();
            assertThat(r.at("/structured/endReason").asString()).isEqualTo("exited");
            assertThat(r.at("/structured/message").isNull()).isTrue();
            // The same result as text, for clients that read only text.
            assertThat(r.at("/content/0/type").asString()).isEqualTo("text");
            assertThat(r.at("/content/0/text").asString()).contains("\"stdout\":\"42\\n\"");
        }
    }

    @Test
    void placesFilesAndFeedsStdin() {
        JsonNode r = scenario("runWithInput");
        assertThat(r.get("isError").asBoolean()).as(r.toString()).isFalse();
        assertThat(r.at("/structured/stdout").asString()).isEqualTo("FROM A FILE from stdin\n");
    }

    @Test
    void aPersistentInterpreterKeepsStateAndReturnsChartsAsImagesAndTablesAsText() {
        JsonNode s = scenario("interpreter");
        assertThat(s.at("/set/isError").asBoolean()).as(s.toString()).isFalse();
        assertThat(s.at("/sum/structured/outputs/0/text~1plain").asString()).isEqualTo("42");
        JsonNode image = s.at("/chart/content/1");
        assertThat(image.path("type").asString()).as(s.at("/chart").toString()).isEqualTo("image");
        assertThat(image.path("mimeType").asString()).isEqualTo("image/png");
        assertThat(image.path("width").asInt()).isEqualTo(300);
        assertThat(image.path("height").asInt()).isEqualTo(200);
        assertThat(s.at("/table/structured/outputs/0/text~1plain").asString()).contains("city", "Oslo", "19");
        assertThat(s.at("/loop/isError").asBoolean()).isTrue();
        assertThat(s.at("/loop/structured/status").asString()).isEqualTo("timeout");
        assertThat(s.at("/loop/structured/message").asString()).contains("keeps its state");
        assertThat(s.at("/after/structured/outputs/0/text~1plain").asString()).isEqualTo("41");
        assertThat(s.at("/contexts/structured/contexts")).hasSize(1);
    }

    @Test
    void aSnapshotForksIntoSandboxesThatStartWithItsFilesAndNeverSeeEachOthersWrites() {
        JsonNode s = scenario("snapshotFork");
        assertThat(s.at("/snapshot/isError").asBoolean()).as(s.toString()).isFalse();
        assertThat(s.at("/snapshot/structured/snapshotId").asString()).startsWith("snap-");
        assertThat(s.at("/snapshot/structured/files").asInt()).isEqualTo(1);
        assertThat(s.at("/fork/structured/sandboxes")).hasSize(2);
        assertThat(s.at("/fork/structured/sandboxes/0/endsWithSession").asBoolean()).isTrue();
        assertThat(s.at("/readA/structured/content").asString()).isEqualTo("step 1 done\n");
        assertThat(s.at("/readB/structured/content").asString()).as("fork A's write is not fork B's").isEqualTo("step 1 done\n");
        assertThat(s.at("/readOriginal/structured/content").asString()).isEqualTo("step 1 done\n");
        assertThat(s.at("/badCount/isError").asBoolean()).isTrue();
        assertThat(s.at("/badCount/content/0/text").asString()).contains("count");
    }

    @Test
    void worksStepByStepInALongLivedSandbox() {
        JsonNode s = scenario("session");
        String id = s.at("/create/structured/sandboxId").asString();
        assertThat(id).startsWith("al-");
        assertThat(s.at("/create/structured/endsWithSession").asBoolean()).isTrue();
        assertThat(s.at("/create/structured/labels/purpose").asString()).isEqualTo("test");
        assertThat(s.at("/write/structured/path").asString()).isEqualTo("/workspace/data.txt");
        assertThat(s.at("/exec/structured/stdout").asString()).isEqualTo("HELLO SANDBOX\n");
        assertThat(s.at("/execCode/structured/stdout").asString()).isEqualTo("hello sandbox\n");
        assertThat(s.at("/read/structured/encoding").asString()).isEqualTo("utf-8");
        assertThat(s.at("/read/structured/content").asString()).isEqualTo("HELLO SANDBOX\n");
        assertThat(s.at("/listFiles/structured/entries").toString()).contains("/workspace/data.txt", "/workspace/out.txt");
        assertThat(s.at("/list/structured/sandboxes").toString()).contains(id);
        assertThat(s.at("/destroy/structured/destroyed").asBoolean()).isTrue();
        JsonNode after = s.get("execAfterDestroy");
        assertThat(after.get("isError").asBoolean()).isTrue();
        assertThat(after.at("/content/0/text").asString()).contains("does not exist", "sandbox_list");
    }

    @Test
    void returnsImagesAndTextFilesTheProgramWroteToItsOutputDirectory() {
        JsonNode r = scenario("image");
        assertThat(r.get("isError").asBoolean()).as(r.toString()).isFalse();
        JsonNode content = r.get("content");
        assertThat(content.get(1).get("type").asString()).isEqualTo("image");
        assertThat(content.get(1).get("mimeType").asString()).isEqualTo("image/png");
        assertThat(content.get(1).get("pngSignature").asString()).isEqualTo("89504e470d0a1a0a");
        assertThat(content.get(2).get("type").asString()).isEqualTo("resource");
        assertThat(content.get(2).get("uri").asString()).isEqualTo("file:///workspace/output/notes.txt");
        assertThat(content.get(2).get("text").asString()).isEqualTo("a red dot\n");
        assertThat(r.at("/structured/files").toString()).contains("dot.png", "image image/png", "notes.txt");
    }

    @Test
    void runCodeMakesAMatplotlibChartOnTheDefaultImage() {
        JsonNode r = scenario("chart");
        assertThat(r.get("isError").asBoolean()).as(r.toString()).isFalse();
        assertThat(r.at("/structured/stdout").asString().strip()).as(r.toString()).isEqualToIgnoringCase("agg");
        JsonNode image = r.get("content").get(1);
        assertThat(image.get("type").asString()).as(r.toString()).isEqualTo("image");
        assertThat(image.get("pngSignature").asString()).isEqualTo("89504e470d0a1a0a");
    }

    @Test
    void aTimeoutKillsTheProgramAndSaysWhatToChange() {
        JsonNode r = scenario("timeout");
        assertThat(r.get("isError").asBoolean()).isTrue();
        assertThat(r.at("/structured/timedOut").asBoolean()).isTrue();
        assertThat(r.at("/structured/endReason").asString()).isEqualTo("timed_out");
        assertThat(r.at("/structured/stdout").asString()).isEqualTo("started\n");
        assertThat(r.at("/structured/message").asString()).contains("timed out after 2s", "timeoutSeconds");
    }

    @Test
    void aFailingProgramIsAToolErrorWithItsExitCodeAndStderr() {
        JsonNode r = scenario("failure");
        assertThat(r.get("isError").asBoolean()).isTrue();
        assertThat(r.at("/structured/exitCode").asInt()).isEqualTo(3);
        assertThat(r.at("/structured/stderr").asString()).isEqualTo("bad input\n");
        assertThat(r.at("/structured/message").asString()).contains("exited with code 3");
    }

    @Test
    void badArgumentsAreToolErrorsThatSayWhatToFix() {
        JsonNode r = scenario("badArguments");
        assertThat(r.at("/unknownLanguage/isError").asBoolean()).isTrue();
        assertThat(r.at("/unknownLanguage/content/0/text").asString()).contains("language", "python", "javascript");
        assertThat(r.at("/unknownArgument/isError").asBoolean()).isTrue();
        assertThat(r.at("/unknownArgument/content/0/text").asString()).contains("unknown argument 'network'", "timeoutSeconds");
        assertThat(r.at("/missingSandbox/isError").asBoolean()).isTrue();
        assertThat(r.at("/missingSandbox/content/0/text").asString()).contains("al-does-not-exist", "does not exist");
        assertThat(r.at("/commandAndCode/content/0/text").asString()).contains("either 'command' or 'language' with 'code'");
        // a tool the server does not have is a protocol error that names it
        assertThat(r.at("/unknownTool/rejected").asString()).as(r.path("unknownTool").toString())
                .contains("Unknown tool: sandbox_frobnicate", "tools/list");
    }

    @Test
    void streamsOutputAsLogMessagesAndReportsProgressWhileTheProgramRuns() {
        JsonNode s = scenario("streaming");
        assertThat(s.at("/result/isError").asBoolean()).isFalse();
        StringBuilder stdout = new StringBuilder();
        StringBuilder stderr = new StringBuilder();
        for (JsonNode log : s.get("logs")) {
            (log.get("logger").asString().equals("stdout") ? stdout : stderr).append(log.get("data").asString());
        }
        assertThat(stdout.toString()).isEqualTo("line 0\nline 1\nline 2\n");
        assertThat(stderr.toString()).isEqualTo("oops\n");
        assertThat(s.get("logs").size()).as("output arrives in pieces while it runs").isGreaterThanOrEqualTo(3);
        JsonNode progress = s.get("progress");
        assertThat(progress.size()).isGreaterThanOrEqualTo(2);
        for (int i = 1; i < progress.size(); i++) {
            assertThat(progress.get(i).get("progress").asDouble()).isGreaterThan(progress.get(i - 1).get("progress").asDouble());
        }
    }

    @Test
    void abortingACallKillsTheExecutionOnTheHost() throws Exception {
        JsonNode a = scenario("abort");
        assertThat(a.get("seenRunning").asBoolean()).as("the process ran on the host before the abort").isTrue();
        assertThat(a.at("/outcome/rejected").asString()).contains("aborts");
        assertThat(a.get("goneAfterAbort").asBoolean()).as("the process is gone after the abort").isTrue();
        assertThat(hostProcessesRunning(a.get("marker").asString())).isEmpty();
        // Only the execution was killed, not the sandbox.
        assertThat(a.at("/afterwards/structured/stdout").asString()).isEqualTo("still alive\n");
    }

    /** Command lines of host processes that contain {@code text} (sandboxed processes are host processes too). */
    static List<String> hostProcessesRunning(String text) throws IOException {
        List<String> found = new ArrayList<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path p : procs) {
                try {
                    String cmdline = new String(Files.readAllBytes(p.resolve("cmdline")), StandardCharsets.UTF_8).replace('\0', ' ').trim();
                    if (cmdline.contains(text)) {
                        found.add(p.getFileName() + ": " + cmdline);
                    }
                } catch (IOException gone) {
                    // the process ended meanwhile
                }
            }
        }
        return found;
    }
}
