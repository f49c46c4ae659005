package dev.airlock.it;

import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.e2b.E2bDoor;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * E2B's own TypeScript SDK ({@code e2b} from npm, pinned in src/test/node's lock file, unchanged)
 * against Airlock's E2B door, pointed at it by the three environment variables a user sets: the
 * sandbox's life, commands, files, the network, pause and connect, and what must be refused.
 */
class E2bSdkTest {

    private static LiveServer live;
    private static JsonNode report;

    @BeforeAll
    static void runTheSdk() throws Exception {
        live = LiveServer.withPolicy("""
                profiles:
                  default: {}
                  strong: {isolation: gvisor}
                clients:
                  local: {tokenFile: token, profiles: [default, strong], allow: ["*"]}
                """, c -> c.withPoolSize(0));
        String url = live.server.e2bUri().toString();
        Map<String, String> env = Map.of("E2B_API_URL", url, "E2B_SANDBOX_URL", url, "E2B_API_KEY", E2bDoor.apiKey(live.token()));
        McpNode.install();
        McpNode.Result r = McpNode.run(java.util.List.of("node", "e2b-client.mjs", "lifecycle", "commands", "terminal", "files", "network",
                "pauseAndConnect", "pauseToDiskAndConnect", "fork", "interpreter", "wrongKey", "unknownTemplate"), env, java.time.Duration.ofMinutes(10));
        assertThat(r.exitCode()).as(r.stderr()).isZero();
        report = r.json();
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    private static JsonNode scenario(String name) {
        JsonNode n = report.get(name);
        assertThat(n).as("scenario %s ran", name).isNotNull();
        assertThat(n.has("error")).as("scenario %s failed: %s", name, n.path("error").asString("")).isFalse();
        return n;
    }

    @Test
    void aSandboxIsCreatedFoundByItsMetadataGivenMoreTimeAndKilled() {
        JsonNode s = scenario("lifecycle");
        assertThat(s.path("templateId").asString()).isEqualTo("base");
        assertThat(s.path("metadata").path("suite").asString()).isEqualTo("e2b-door");
        assertThat(s.path("metadata").has("e2b.template")).as("Airlock's own label stays out of the metadata").isFalse();
        assertThat(s.path("state").asString()).isEqualTo("running");
        assertThat(s.path("listed").valueStream().map(JsonNode::asString)).containsExactly(s.path("sandboxId").asString());
        assertThat(s.path("extendedBySeconds").asLong()).as("300 s, then 600 s from then").isBetween(250L, 320L);
        assertThat(s.path("running").asBoolean()).isTrue();
        // its metrics: one entry, now, from its cgroup
        assertThat(s.path("metrics").size()).as(s.path("metrics").toString()).isEqualTo(1);
        JsonNode m = s.path("metrics").get(0);
        assertThat(m.path("cpuUsedPct").asDouble()).as("it ran Python: %s", m).isGreaterThan(0).isLessThanOrEqualTo(100);
        assertThat(m.path("memUsed").asLong()).isPositive().isLessThanOrEqualTo(m.path("memTotal").asLong());
        assertThat(m.path("cpuCount").asInt()).isPositive();
        assertThat(m.path("diskTotal").asLong()).isPositive();
        assertThat(m.path("timestamp").asLong()).isCloseTo(System.currentTimeMillis(), org.assertj.core.data.Offset.offset(600_000L));
        assertThat(s.path("killed").asBoolean()).isTrue();
        assertThat(s.path("listedAfter")).isEmpty();
        // each request is on the audit log, through the E2B door
        assertThat(live.audit(s.path("sandboxId").asString(), AuditRecord.REQUEST)).extracting(AuditRecord::actor).contains("local@e2b");
    }

    @Test
    void commandsStreamTheirOutputTakeEnvsAndCwdFailWithTheSdksErrorAndRunInTheBackground() {
        JsonNode s = scenario("commands");
        assertThat(s.path("stdout").asString()).isEqualTo("line 1\nline 2\nline 3\n");
        assertThat(s.path("chunks").size()).as("streamed as it came: %s", s.path("chunks")).isGreaterThan(1);
        assertThat(s.path("exitCode").asInt()).isZero();
        assertThat(s.path("env").asString()).isEqualTo("hello from /tmp as /home/user\n");
        assertThat(s.path("home").asString()).isEqualTo("/home/user\n");
        assertThat(s.path("viaHome").asString()).isEqualTo("written-at-home\n/home/user\n");
        assertThat(s.path("homeFile").asString()).isEqualTo("written-at-home\n");
        assertThat(s.path("failed").path("kind").asString()).isEqualTo("CommandExitError");
        assertThat(s.path("failed").path("exitCode").asInt()).isEqualTo(3);
        assertThat(s.path("failed").path("stderr").asString()).isEqualTo("oops\n");
        int pid = s.path("backgroundPid").asInt();
        assertThat(s.path("listed").valueStream().map(JsonNode::asInt)).contains(pid);
        assertThat(s.path("killed").asBoolean()).isTrue();
        assertThat(s.path("listedAfter").valueStream().map(JsonNode::asInt)).doesNotContain(pid);
        // a background command left and connected to again: its output whole, to its end
        assertThat(s.path("reconnected").asString()).isEqualTo("later\n");
    }

    @Test
    void aPtyTakesInputAndASizeAndACommandsStdinIsFedAndClosed() {
        JsonNode s = scenario("terminal");
        assertThat(s.path("out").asString()).as("the PTY's output").contains("30 100", "typed-42");
        assertThat(s.path("ptyExit").asInt()).as(s.toString()).isEqualTo(5);
        assertThat(s.path("fed").asString()).isEqualTo("fed through stdin\n");
        assertThat(s.path("fedExit").asInt()).isZero();
        assertThat(s.path("refused").path("message").asString()).as(s.path("refused").toString()).contains("takes no input");
    }

    @Test
    void filesAreWrittenReadListedMovedAndRemovedAndAMissingOneIsNotFound() {
        JsonNode s = scenario("files");
        assertThat(s.path("writtenPath").asString()).isEqualTo("/home/user/notes/hello.txt");
        assertThat(s.path("text").asString()).isEqualTo("hello from e2b\n");
        assertThat(s.path("bytesEqual").asBoolean()).isTrue();
        assertThat(s.path("made").asBoolean()).isTrue();
        assertThat(s.path("madeAgain").asBoolean()).as("a directory that is there").isFalse();
        assertThat(s.path("listing").toString()).contains("\"name\":\"hello.txt\",\"type\":\"file\",\"size\":15", "\"name\":\"sub\",\"type\":\"dir\"");
        assertThat(s.path("movedPath").asString()).isEqualTo("/home/user/notes/sub/renamed.txt");
        assertThat(s.path("existsOld").asBoolean()).isFalse();
        assertThat(s.path("existsNew").asBoolean()).isTrue();
        assertThat(s.path("seenByShell").asString()).isEqualTo("hello from e2b\n");
        assertThat(s.path("existsAfterRemove").asBoolean()).isFalse();
        assertThat(s.path("missing").path("kind").asString()).as(s.path("missing").toString()).isEqualTo("NotFoundError");
        assertThat(s.path("several").valueStream().map(JsonNode::asString)).containsExactly("/home/user/many/a.txt", "/tmp/b.txt");
        assertThat(s.path("both").asString()).isEqualTo("AB");
    }

    @Test
    void aSandboxHasNoNetworkUnlessItsProfileAllowsIt() {
        JsonNode s = scenario("network");
        assertThat(s.path("kind").asString()).as(s.toString()).isEqualTo("CommandExitError");
        assertThat(s.path("stderr").asString()).contains("urlopen error");
    }

    @Test
    void aPausedSandboxIsResumedByConnectWithItsFiles() {
        JsonNode s = scenario("pauseAndConnect");
        assertThat(s.path("paused").asBoolean()).isTrue();
        assertThat(s.path("stateWhilePaused").asString()).isEqualTo("paused");
        assertThat(s.path("sameId").asBoolean()).isTrue();
        assertThat(s.path("state").asString()).isEqualTo("running");
        assertThat(s.path("kept").asString()).isEqualTo("still here");
        assertThat(s.path("echo").asString()).isEqualTo("resumed\n");
        // connect's timeout (the same 300 s, two seconds and more later) moves the end later, never earlier
        assertThat(s.path("lengthenedBy").asLong()).as(s.toString()).isGreaterThanOrEqualTo(1000L);
    }

    /** E2B's pause of a gVisor sandbox is a pause to disk (on the audit log so), and connect restores it with its processes running on. */
    @Test
    void aGvisorSandboxPausedThroughE2bGoesToDiskAndConnectHasItsProcessesGoOn() {
        JsonNode s = scenario("pauseToDiskAndConnect");
        assertThat(s.path("paused").asBoolean()).as(s.toString()).isTrue();
        assertThat(s.path("stateWhilePaused").asString()).isEqualTo("paused");
        assertThat(s.path("after").asLong()).as("the counter, counting on from where it was: " + s).isGreaterThan(s.path("before").asLong());
        // the second pause, with a background command running, froze it in memory instead
        assertThat(s.path("pausedWithACommand").asBoolean()).as(s.toString()).isTrue();
        assertThat(s.path("echo").asString()).isEqualTo("resumed\n");
        java.util.List<String> pauses = live.audit(s.path("sandboxId").asString(), AuditRecord.LIFECYCLE).stream().map(AuditRecord::detail)
                .filter(d -> d.contains("\"paused\"")).toList();
        assertThat(pauses).as("the pauses on the audit log").hasSize(2);
        assertThat(pauses.getFirst()).contains("to disk");
        assertThat(pauses.getLast()).doesNotContain("to disk");
    }

    @Test
    void aForkGivesSandboxesOfTheirOwnWithTheFilesOfTheRunningOne() {
        JsonNode s = scenario("fork");
        assertThat(s.path("results").size()).isEqualTo(2);
        java.util.Set<String> ids = new java.util.HashSet<>();
        for (JsonNode f : s.path("results")) {
            assertThat(f.has("error")).as(f.toString()).isFalse();
            ids.add(f.path("id").asString());
            assertThat(f.path("seen").asString()).isEqualTo("before the fork");
            assertThat(f.path("metadata").path("role").asString()).isEqualTo("parent");
            assertThat(f.path("echo").asString()).isEqualTo("forked\n");
        }
        assertThat(ids).hasSize(2).doesNotContain(s.path("parent").asString());
        assertThat(s.path("parentAfter").asString()).as("what a fork writes is its own").isEqualTo("before the fork");
    }

    @Test
    void theCodeInterpreterSdkKeepsStateAndReturnsStdoutErrorsChartsAndTables() {
        JsonNode s = scenario("interpreter");
        assertThat(s.path("sum").asString()).isEqualTo("42");
        assertThat(s.path("sumCount").asInt()).isEqualTo(2);
        assertThat(s.path("printed").toString()).isEqualTo("[\"hello\\n\"]");
        assertThat(s.path("failed").path("name").asString()).isEqualTo("ZeroDivisionError");
        assertThat(s.path("failed").path("value").asString()).contains("division by zero");
        assertThat(s.path("failed").path("traceback").asString()).contains("ZeroDivisionError");
        assertThat(s.path("chartFormats").toString()).contains("png");
        assertThat(s.path("pngMagic").asString()).isEqualTo("PNG");
        assertThat(s.path("pngBytes").asInt()).isGreaterThan(1000);
        assertThat(s.path("tableHtml").asString()).contains("<table", "<td>3</td>");
        assertThat(s.path("home").asString()).as("the kernel's home is E2B's").isEqualTo("'/home/user'");
        assertThat(s.path("homeFile").asString()).isEqualTo("cell");
        assertThat(s.path("contextCwd").asString()).isEqualTo("/home/user");
        assertThat(s.path("inContext").asString()).isEqualTo("10");
        assertThat(s.path("defaultHasY").asString()).as("a context of its own").isEqualTo("False");
        assertThat(s.path("contexts").valueStream().map(JsonNode::asString)).contains(s.path("contextId").asString()).hasSize(2);
        assertThat(s.path("contextsAfter").valueStream().map(JsonNode::asString)).doesNotContain(s.path("contextId").asString()).hasSize(1);
    }

    @Test
    void aWrongKeyIsTheSdksAuthenticationErrorAndAnUnknownTemplateNamesTheKnownOnes() {
        assertThat(scenario("wrongKey").path("kind").asString()).as(report.path("wrongKey").toString()).isEqualTo("AuthenticationError");
        JsonNode template = scenario("unknownTemplate");
        assertThat(template.path("message").asString()).contains("unknown template 'no-such-template'", "base", "code-interpreter-v1", "default");
    }
}
