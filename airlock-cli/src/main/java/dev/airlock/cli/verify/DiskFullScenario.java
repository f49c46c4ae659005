package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.AirlockException;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static dev.airlock.cli.verify.RecoveryChecks.leftovers;
import static dev.airlock.cli.verify.RecoveryChecks.verdict;

/**
 * The disk-full scenario: the state directory's file system is full (a {@value #SIZE} tmpfs mounted
 * by verify and filled: room for what an engine writes there as it starts, such as the microVM
 * driver's 1.4 MB initramfs, and no more once filled). Creating a sandbox must fail with a clear error and leave nothing; once space
 * is freed a sandbox must start again. The tmpfs is always unmounted: at the scenario's end, or by
 * {@link #unmountAtExit} if verify is interrupted.
 */
final class DiskFullScenario {

    private static final String SIZE = "4m";

    /** The tmpfs this scenario mounted, while it is mounted. */
    private volatile Path mounted;

    Outcome run(VerifyTarget target) throws IOException, InterruptedException {
        Path state = target.stateRoot();
        Files.createDirectories(state);
        String failed = command("mount", "-t", "tmpfs", "-o", "size=" + SIZE + ",mode=0711", "tmpfs", state.toString());
        if (failed != null) {
            return Outcome.error("cannot mount a " + SIZE + " tmpfs at " + state + " (verify needs root): " + failed);
        }
        mounted = state;
        try {
            List<String> problems = new ArrayList<>();
            StringBuilder happened = new StringBuilder("mounted a " + SIZE + " tmpfs as the state directory");
            try (Engine engine = new Engine(target.open())) {
                String prefix = "al-" + engine.driver().instance() + "-";
                // the engine keeps its files on a tmpfs of its own, no larger than what the state directory had free
                Path fill = state.resolve("engines").resolve(engine.driver().instance()).resolve("fill");
                long filled = fillUp(fill);
                happened.append(", started an engine on it and filled it (").append(filled).append(" more bytes)");
                List<String> before = listTree(state);
                try (Sandbox s = engine.create(SandboxSpec.defaults())) {
                    problems.add("sandbox " + s.id() + " was created although the state directory is full");
                } catch (AirlockException e) {
                    happened.append("; creating a sandbox failed: ").append(e.getMessage());
                    if (!e.getMessage().contains("No space left on device")) {
                        problems.add("the error does not say the disk is full (No space left on device)");
                    }
                }
                List<String> after = listTree(state);
                if (!after.equals(before)) {
                    List<String> added = new ArrayList<>(after);
                    added.removeAll(before);
                    problems.add("the failed create left files in the state directory: " + added);
                }
                List<String> leaks = target.leftovers(prefix);
                if (!leaks.isEmpty()) {
                    problems.add("the failed create left: " + String.join("; ", leaks));
                }
                Files.delete(fill);
                try (Sandbox s = engine.create(SandboxSpec.defaults())) {
                    ExecResult r = s.exec(ExecRequest.of("echo", "ok"));
                    happened.append("; with the space freed, a new sandbox ran: ").append(Verifier.observed(r));
                } catch (AirlockException e) {
                    problems.add("with the space freed, a sandbox still could not be created: " + e.getMessage());
                }
                engine.close();
                problems.addAll(leftovers(target, prefix));
            }
            return verdict(happened.toString(), problems);
        } finally {
            if (command("umount", state.toString()) != null) {
                command("umount", "-l", state.toString());
            }
            mounted = null;
        }
    }

    /** For a shutdown hook: lazily unmounts the tmpfs if it is still mounted; best effort. */
    void unmountAtExit() {
        Path m = mounted;
        if (m != null) {
            try {
                command("umount", "-l", m.toString());
            } catch (IOException | InterruptedException ignored) {
                // best effort at exit
            }
        }
    }

    private static long fillUp(Path fill) {
        long n = 0;
        byte[] block = new byte[4096];
        try (OutputStream out = Files.newOutputStream(fill)) {
            while (true) {
                out.write(block);
                out.flush();
                n += block.length;
            }
        } catch (IOException full) {
            return n;
        }
    }

    /** The regular files under {@code root} (directories made on the way are not state). */
    private static List<String> listTree(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(Files::isRegularFile).map(p -> root.relativize(p).toString()).sorted().toList();
        }
    }

    /** Runs a host command; null when it succeeded, else its output. */
    private static String command(String... argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return String.join(" ", argv) + " did not finish";
        }
        return p.exitValue() == 0 ? null : String.join(" ", argv) + ": " + (out.isEmpty() ? "exit " + p.exitValue() : out);
    }
}
