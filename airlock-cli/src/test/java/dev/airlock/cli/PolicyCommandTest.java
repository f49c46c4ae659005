package dev.airlock.cli;

import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The operator's side of the policy, as a user runs it: {@code airlock policy check} and
 * {@code token}, and a server that refuses to start on a bad policy. ({@code airlock mcp --client}
 * showing a stdio client only its tools is airlock-it's {@code McpStdioPolicyTest}: it needs the
 * real MCP clients from npm.)
 */
class PolicyCommandTest {

    @Test
    void checkPrintsWhatAValidPolicyGrants(@TempDir Path dir) throws Exception {
        Path policy = dir.resolve("policy.yaml");
        Files.writeString(policy, """
                profiles:
                  small: {limits: {memory: 128m}, approvals: [create]}
                clients:
                  agent: {tokenSha256: %s, profiles: [small], allow: [run], quotas: {sandboxes: 2}}
                """.formatted("ab".repeat(32)));
        CliProcess cli = CliProcess.run("policy", "check", policy.toString());
        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        assertThat(cli.stdout()).contains("valid", "profile small", "approvals [create]", "client agent", "may [run]", "at most 2 sandboxes");
    }

    @Test
    void checkAndServeRefuseABadPolicyNamingTheLine(@TempDir Path dir) throws Exception {
        Path policy = dir.resolve("policy.yaml");
        Files.writeString(policy, """
                profiles:
                  small:
                    limits: {memory: 128m, swap: 1g}
                clients: {}
                """);
        CliProcess check = CliProcess.run("policy", "check", policy.toString());
        assertThat(check.exitCode()).isEqualTo(2);
        assertThat(check.stderr()).contains("line 3", "profiles.small.limits.swap", "unknown field 'swap'");
        CliProcess serve = CliProcess.run("serve", "--port", "0", "--data-dir", dir.resolve("data").toString(), "--policy", policy.toString());
        assertThat(serve.exitCode()).isEqualTo(2);
        assertThat(serve.stderr()).contains("line 3", "profiles.small.limits.swap");
        CliProcess missing = CliProcess.run("policy", "check", dir.resolve("nope.yaml").toString());
        assertThat(missing.exitCode()).isEqualTo(2);
        assertThat(missing.stderr()).contains("cannot read the policy file");
    }

    /**
     * Issue 31: a policy naming the data directory's token as a client's tokenFile was refused by
     * check before the first serve, which then made that file. Check takes it as it will be, and says
     * so; any other missing token file is still refused.
     */
    @Test
    void checkTakesTheDataDirectorysTokenThatServeWillMake(@TempDir Path dir) throws Exception {
        Path data = dir.resolve("data");
        Path policy = dir.resolve("policy.yaml");
        Files.writeString(policy, """
                profiles:
                  default: {}
                clients:
                  local: {tokenFile: %s, profiles: [default], allow: ["*"]}
                """.formatted(data.resolve("token")));
        CliProcess check = CliProcess.run("policy", "check", policy.toString(), "--data-dir", data.toString());
        assertThat(check.exitCode()).as(check.stderr()).isZero();
        assertThat(check.stdout()).contains("valid", "note: client 'local': its tokenFile " + data.resolve("token")
                + " does not exist yet; the server makes it when it first starts with that data directory", "client local");

        CliProcess elsewhere = CliProcess.run("policy", "check", policy.toString(), "--data-dir", dir.resolve("other").toString());
        assertThat(elsewhere.exitCode()).isNotZero();
        assertThat(elsewhere.stderr()).contains("there is no token file at " + data.resolve("token"));
    }

    @Test
    void tokenPrintsATokenAndItsHash() throws Exception {
        CliProcess cli = CliProcess.run("policy", "token");
        assertThat(cli.exitCode()).isZero();
        List<String> lines = cli.stdout().lines().toList();
        String token = lines.get(0).replace("token:", "").strip();
        String hash = lines.get(1).replace("tokenSha256:", "").strip();
        assertThat(token).startsWith("alk_").hasSize(68);
        assertThat(hash).isEqualTo(HexFormat.of().formatHex(Policy.sha256(token)));
        assertThat(CliProcess.run("policy", "token").stdout()).doesNotContain(token);
    }
}
