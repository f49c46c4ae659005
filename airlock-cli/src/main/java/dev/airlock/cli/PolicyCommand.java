package dev.airlock.cli;

import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Policy;
import dev.airlock.server.policy.PolicyFile;
import dev.airlock.server.policy.Profile;
import dev.airlock.server.policy.TokenFile;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.HexFormat;

/** {@code airlock policy}: check a policy file, and make client tokens for it. */
@Command(name = "policy", mixinStandardHelpOptions = true, description = "Check a policy file, or make a client token for one.",
        subcommands = {PolicyCommand.Check.class, PolicyCommand.Token.class})
final class PolicyCommand {

    @Command(name = "check", mixinStandardHelpOptions = true,
            description = "Load a policy file as the server would, and print what it grants; exit 2 with the line and field of the first error.")
    static final class Check implements java.util.concurrent.Callable<Integer> {
        @Parameters(paramLabel = "FILE")
        Path file;

        @Option(names = "--data-dir", paramLabel = "DIR",
                description = "The data directory the server will use (env AIRLOCK_DATA_DIR; default /var/lib/airlock): a tokenFile that is"
                        + " its 'token', not made yet, is fine, since the server makes it at its first start.")
        Path dataDir = Path.of(System.getenv().getOrDefault("AIRLOCK_DATA_DIR", "/var/lib/airlock"));

        @Override
        public Integer call() {
            java.util.List<String> notes = new java.util.ArrayList<>();
            Policy p = PolicyFile.load(file, new PolicyFile.MadeAtStart(dataDir.resolve("token"), notes));
            System.out.println(file + ": valid; approvals wait " + p.approvalTimeout().toSeconds() + " s"
                    + (p.elicitation() ? ", MCP clients are asked through elicitation" : ", only operators decide (elicitation off)"));
            notes.forEach(n -> System.out.println("  note: " + n));
            for (Profile profile : p.profiles().values()) {
                System.out.println("  profile " + profile.name() + ": image " + profile.image() + ", network "
                        + (profile.network().isNone() ? "none" : profile.network().allow().size() + " destinations")
                        + ", inputs " + profile.inputs().size() + ", credentials " + profile.credentials()
                        + ", approvals " + profile.approvals().stream().map(a -> a.id()).sorted().toList()
                        + (profile.requestApprovals().isEmpty() ? "" : ", requests approved by a person: " + profile.requestApprovals().stream()
                        .map(r -> r.methods().stream().sorted().toList() + " to " + r.destinations()).toList()));
            }
            for (Client c : p.clients().values()) {
                System.out.println("  client " + c.name() + ": profiles " + c.profiles() + ", may "
                        + c.operations().stream().map(o -> o.id()).sorted().toList()
                        + (c.maxSandboxes() > 0 ? ", at most " + c.maxSandboxes() + " sandboxes" : "")
                        + (c.executionsPerMinute() > 0 ? ", " + c.executionsPerMinute() + " executions a minute" : ""));
            }
            return 0;
        }
    }

    @Command(name = "token", mixinStandardHelpOptions = true,
            description = "Print a new random client token and the tokenSha256 line to put in the policy; give the token to the client only.")
    static final class Token implements java.util.concurrent.Callable<Integer> {
        @Override
        public Integer call() {
            String token = TokenFile.newToken();
            System.out.println("token:       " + token);
            System.out.println("tokenSha256: " + HexFormat.of().formatHex(Policy.sha256(token)));
            return 0;
        }
    }
}
