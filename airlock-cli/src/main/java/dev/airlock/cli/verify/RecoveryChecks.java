package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.Engine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * How every host-side recovery scenario ends: what it left behind of its sandboxes and engines,
 * its verdict, and the clean-up of whatever it left so that its temporary directory can go.
 */
final class RecoveryChecks {

    private RecoveryChecks() {
    }

    /** What the tier's leak check finds of the sandboxes with {@code prefix}, and engine state left in the directory. */
    static List<String> leftovers(VerifyTarget target, String prefix) {
        List<String> problems = new ArrayList<>();
        List<String> leaks = target.leftovers(prefix);
        if (!leaks.isEmpty()) {
            problems.add("left behind: " + String.join("; ", leaks));
        }
        Path engines = target.stateRoot().resolve("engines");
        if (Files.isDirectory(engines)) {
            try (Stream<Path> s = Files.list(engines)) {
                List<Path> left = s.toList();
                if (!left.isEmpty()) {
                    problems.add("engine state left behind: " + left);
                }
            } catch (IOException e) {
                problems.add("cannot list " + engines + ": " + e.getMessage());
            }
        }
        return problems;
    }

    /** Held when there are no problems, else broken with them, one a line after what happened. */
    static Outcome verdict(String happened, List<String> problems) {
        if (problems.isEmpty()) {
            return Outcome.held(happened + "; nothing is left behind");
        }
        return Outcome.broken(happened + "\n" + String.join("\n", problems));
    }

    /** Whatever a scenario left, so the temporary directory can go: a fresh engine reaps dead instances. */
    static void cleanUp(VerifyTarget target) {
        try (Stream<Path> s = Files.list(target.stateRoot().resolve("engines"))) {
            if (s.findAny().isEmpty()) {
                return;
            }
        } catch (IOException e) {
            return;
        }
        try {
            new Engine(target.open()).close();
        } catch (RuntimeException e) {
            // best effort: the temporary directory is removed anyway
        }
    }
}
