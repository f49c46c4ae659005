package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.HostFiles;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.stream.Stream;

/**
 * Runs the host-side recovery scenarios, one class each ({@link KilledEngineScenario},
 * {@link KilledAgentScenario}, {@link AgentFloodScenario}, {@link DiskFullScenario},
 * {@link OutputTreeScenario}, {@link EgressFloodScenario}). Each runs in its own temporary state
 * directory with its own engine, so it never touches the sandboxes of a server running on this
 * host; each ends by showing that nothing of its sandboxes remains ({@link RecoveryChecks},
 * {@code LeakCheck}). This class makes that directory and removes it afterwards, also when verify
 * is interrupted mid-scenario.
 */
final class Recovery {

    private final VerifyTarget base;
    private final DiskFullScenario diskFull = new DiskFullScenario();

    /** @param base the tier and driver settings to use; the state directory is replaced by a temporary one */
    Recovery(VerifyTarget base) {
        this.base = base;
    }

    Outcome run(String scenario) {
        Path tmp;
        try {
            // Short: the agent's socket path under it must stay within the kernel's 108 bytes.
            tmp = shortTempDirectory();
            // The sandbox's mapped root must traverse it to reach its bundle.
            Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwx--x--x"));
        } catch (IOException e) {
            return Outcome.error("cannot make a temporary state directory: " + e.getMessage());
        }
        // If verify is interrupted mid-scenario: unmount what it mounted, and remove the temporary
        // directory unless an engine's state is still in it (the agents then kill their processes).
        VerifyTarget target = base.withStateDir(tmp.resolve("s"));
        Path dir = tmp;
        Thread atExit = new Thread(() -> {
            diskFull.unmountAtExit();
            try (Stream<Path> engines = Files.list(target.stateRoot().resolve("engines"))) {
                if (engines.findAny().isPresent()) {
                    return;
                }
            } catch (IOException noEngines) {
                // nothing of an engine is there
            }
            HostFiles.deleteTree(dir);
        }, "airlock-verify-recovery-exit");
        Runtime.getRuntime().addShutdownHook(atExit);
        try {
            return switch (scenario) {
                case "killed-engine" -> KilledEngineScenario.run(target);
                case "killed-agent" -> KilledAgentScenario.run(target);
                case "agent-flood" -> AgentFloodScenario.run(target);
                case "disk-full" -> diskFull.run(target);
                case "output-tree" -> OutputTreeScenario.run(target);
                case "egress-flood" -> EgressFloodScenario.run(target);
                default -> Outcome.error("unknown scenario " + scenario);
            };
        } catch (IOException e) {
            return Outcome.error("the scenario failed on the host: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Outcome.error("interrupted");
        } finally {
            HostFiles.deleteTree(tmp);
            try {
                Runtime.getRuntime().removeShutdownHook(atExit);
            } catch (IllegalStateException shuttingDown) {
                // the hook runs anyway
            }
        }
    }

    /** A new directory under java.io.tmpdir with a short name (alv- and 6 random characters). */
    private static Path shortTempDirectory() throws IOException {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        SecureRandom random = new SecureRandom();
        Path parent = Path.of(System.getProperty("java.io.tmpdir"));
        for (int attempt = 0; attempt < 100; attempt++) {
            StringBuilder name = new StringBuilder("alv-");
            for (int i = 0; i < 6; i++) {
                name.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            try {
                return Files.createDirectory(parent.resolve(name.toString()));
            } catch (FileAlreadyExistsException taken) {
                // try another name
            }
        }
        throw new IOException("cannot create a temporary directory under " + parent);
    }
}
