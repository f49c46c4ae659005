package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.Engine;
import dev.airlock.core.Printable;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static dev.airlock.cli.verify.RecoveryChecks.cleanUp;
import static dev.airlock.cli.verify.RecoveryChecks.leftovers;
import static dev.airlock.cli.verify.RecoveryChecks.verdict;

/**
 * The killed-engine scenario: an {@code airlock run} in its own JVM is killed with SIGKILL while
 * its program runs. The sandbox's processes must die with it, and the next engine start must reap
 * the rest.
 */
final class KilledEngineScenario {

    private KilledEngineScenario() {
    }

    static Outcome run(VerifyTarget target) throws IOException, InterruptedException {
        ChildCli cli = ChildCli.start(target, List.of(), true, "--lang", "sh", "--code", "echo running; sleep 1000 & sleep 1000");
        Process process = cli.process();
        try {
            boolean running = HostProcesses.eventually(60_000, () -> cli.out().contains("running") || !process.isAlive());
            if (!running || !cli.out().contains("running")) {
                return Outcome.error("the child 'airlock run' did not start its program: " + Printable.quoted(cli.out(), Findings.SHOWN_CHARS));
            }
            String prefix = "al-" + onlyInstance(target) + "-";
            List<HostProcesses.HostProcess> before = HostProcesses.inSandboxes(target, prefix);
            if (before.isEmpty()) {
                return Outcome.error("no process of the child's sandbox was seen on the host, so the check proves nothing");
            }
            cli.kill();
            cli.awaitOutput();
            StringBuilder happened = new StringBuilder("killed 'airlock run' (pid " + process.pid() + ") with SIGKILL while its sandbox ran "
                    + before.size() + " processes");
            List<String> problems = new ArrayList<>();
            if (HostProcesses.eventually(30_000, () -> HostProcesses.inSandboxes(target, prefix).isEmpty())) {
                happened.append("; every process of the sandbox died with it");
            } else {
                problems.add("processes of the killed CLI's sandbox still run 30s later: " + HostProcesses.describe(HostProcesses.inSandboxes(target, prefix)));
            }
            List<String> reaped;
            try (Engine next = new Engine(target.open())) {
                reaped = next.reapedAtStart();
            }
            happened.append("; the next engine start reaped: ").append(reaped.isEmpty() ? "nothing" : String.join(", ", reaped));
            if (reaped.stream().noneMatch(l -> l.startsWith("state of instance "))) {
                problems.add("the next engine start did not reap the dead instance's state");
            }
            problems.addAll(leftovers(target, prefix));
            return verdict(happened.toString(), problems);
        } finally {
            cli.kill();
            cleanUp(target);
        }
    }

    /** The instance name of the only engine under the state directory. */
    private static String onlyInstance(VerifyTarget target) throws IOException {
        try (Stream<Path> s = Files.list(target.stateRoot().resolve("engines"))) {
            List<Path> instances = s.toList();
            if (instances.size() != 1) {
                throw new IOException("expected one engine instance under " + target.stateRoot() + ", found " + instances);
            }
            return instances.getFirst().getFileName().toString();
        }
    }
}
