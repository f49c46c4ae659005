package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.HostFiles;
import dev.airlock.core.Limits;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Printable;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The host-side recovery scenarios. Each runs in its own temporary state directory with its own
 * engine, so it never touches the sandboxes of a server running on this host; each ends by showing
 * that nothing of its sandboxes remains ({@link LeakCheck}).
 */
final class Recovery {

    private final OciDriverConfig base;
    /** The tmpfs the disk-full scenario mounted, while it is mounted. */
    private volatile Path mountedTmpfs;

    /** @param base the runtime and host ids to use; the state directory is replaced by a temporary one */
    Recovery(OciDriverConfig base) {
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
        Path dir = tmp;
        Thread atExit = new Thread(() -> {
            Path mounted = mountedTmpfs;
            if (mounted != null) {
                try {
                    command("umount", "-l", mounted.toString());
                } catch (IOException | InterruptedException ignored) {
                    // best effort at exit
                }
            }
            try (Stream<Path> engines = Files.list(dir.resolve("s").resolve("engines"))) {
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
            OciDriverConfig config = base.withStateRoot(tmp.resolve("s"));
            return switch (scenario) {
                case "killed-engine" -> killedEngine(config);
                case "killed-agent" -> killedAgent(config);
                case "agent-flood" -> agentFlood(config);
                case "disk-full" -> diskFull(config);
                case "output-tree" -> OutputTreeScenario.run(config);
                case "egress-flood" -> EgressFloodScenario.run(config);
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

    /**
     * (1) An {@code airlock run} in its own JVM is killed with SIGKILL while its program runs: the
     * sandbox's processes die with it, and the next engine start reaps the rest.
     */
    private Outcome killedEngine(OciDriverConfig config) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("dev.airlock.cli.AirlockCli");
        command.addAll(List.of("run", "--runtime", config.runtime(), "--state-dir", config.stateRoot().toString(),
                "--lang", "sh", "--code", "echo running; sleep 1000 & sleep 1000"));
        Process cli = new ProcessBuilder(command).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Thread pump = pump(cli.getInputStream(), out);
        try {
            boolean running = HostProcesses.eventually(60_000, () -> text(out).contains("running") || !cli.isAlive());
            if (!running || !text(out).contains("running")) {
                return Outcome.error("the child 'airlock run' did not start its program: " + Printable.quoted(text(out), Findings.SHOWN_CHARS));
            }
            String prefix = "al-" + onlyInstance(config) + "-";
            List<HostProcesses.HostProcess> before = HostProcesses.inSandboxes(prefix);
            if (before.isEmpty()) {
                return Outcome.error("no process of the child's sandbox was seen on the host, so the check proves nothing");
            }
            cli.destroyForcibly();
            cli.waitFor(30, TimeUnit.SECONDS);
            pump.join(5_000);
            StringBuilder happened = new StringBuilder("killed 'airlock run' (pid " + cli.pid() + ") with SIGKILL while its sandbox ran "
                    + before.size() + " processes");
            List<String> problems = new ArrayList<>();
            if (HostProcesses.eventually(30_000, () -> HostProcesses.inSandboxes(prefix).isEmpty())) {
                happened.append("; every process of the sandbox died with it");
            } else {
                problems.add("processes of the killed CLI's sandbox still run 30s later: " + HostProcesses.describe(HostProcesses.inSandboxes(prefix)));
            }
            List<String> reaped;
            try (Engine next = new Engine(new OciDriver(config))) {
                reaped = next.reapedAtStart();
            }
            happened.append("; the next engine start reaped: ").append(reaped.isEmpty() ? "nothing" : String.join(", ", reaped));
            if (reaped.stream().noneMatch(l -> l.startsWith("state of instance "))) {
                problems.add("the next engine start did not reap the dead instance's state");
            }
            problems.addAll(leftovers(config, prefix));
            return verdict(happened.toString(), problems);
        } finally {
            cli.destroyForcibly();
            cli.waitFor(30, TimeUnit.SECONDS);
            cleanUp(config);
        }
    }

    /**
     * (2) The sandbox's PID 1 (the agent) is killed from the host while an execution runs: the
     * execution ends as cancelled, and nothing of the sandbox remains once it is closed.
     */
    private Outcome killedAgent(OciDriverConfig config) throws InterruptedException {
        try (Engine engine = new Engine(new OciDriver(config))) {
            String prefix = "al-" + engine.driver().instance() + "-";
            Sandbox sandbox = engine.create(SandboxSpec.defaults());
            CountDownLatch started = new CountDownLatch(1);
            CompletableFuture<ExecResult> exec = CompletableFuture.supplyAsync(() -> sandbox.exec(
                    ExecRequest.of("sh", "-c", "echo started; sleep 1000 & sleep 1000"), new OutputListener() {
                        @Override
                        public void stdout(byte[] chunk) {
                            started.countDown();
                        }
                    }));
            List<String> problems = new ArrayList<>();
            StringBuilder happened = new StringBuilder();
            try {
                if (!started.await(30, TimeUnit.SECONDS)) {
                    return Outcome.error("the execution did not start within 30s");
                }
                List<HostProcesses.HostProcess> agents = HostProcesses.inSandboxes(sandbox.id().value()).stream()
                        .filter(p -> p.cmdline().startsWith("/.airlock/airlock-agent")).toList();
                if (agents.size() != 1) {
                    return Outcome.error("expected one agent process of sandbox " + sandbox.id() + " on the host, found: "
                            + HostProcesses.describe(agents));
                }
                long agentPid = agents.getFirst().pid();
                ProcessHandle.of(agentPid).ifPresent(ProcessHandle::destroyForcibly);
                happened.append("killed the agent (host pid ").append(agentPid).append(") with SIGKILL under a running execution");
                ExecResult r = exec.get(60, TimeUnit.SECONDS);
                happened.append("; the execution ").append(Verifier.observed(r));
                if (r.endReason() != EndReason.CANCELLED) {
                    problems.add("the execution ended " + VerifyCase.label(r.endReason()) + ", expected cancelled");
                }
            } catch (Exception e) {
                problems.add("the execution did not end within 60s of the agent's death: " + e);
            } finally {
                try {
                    sandbox.close();
                } catch (AirlockException e) {
                    problems.add("closing the sandbox failed: " + e.getMessage());
                }
            }
            if (HostProcesses.eventually(15_000, () -> HostProcesses.inSandboxes(prefix).isEmpty())) {
                happened.append("; no process of the sandbox remains");
            } else {
                problems.add("processes remain: " + HostProcesses.describe(HostProcesses.inSandboxes(prefix)));
            }
            engine.close();
            problems.addAll(leftovers(config, prefix));
            return verdict(happened.toString(), problems);
        } finally {
            cleanUp(config);
        }
    }

    /**
     * (3) A program writes to stdout as fast as it can until the timeout. The run is an
     * {@code airlock run --json} in its own JVM with a 64 MiB heap: if the host buffered the flood it
     * would die of OutOfMemoryError; it must instead keep exactly the output limit, end the run at the
     * timeout, and stay within a bounded resident size (sampled from /proc while it runs).
     */
    private Outcome agentFlood(OciDriverConfig config) throws IOException, InterruptedException {
        long limit = Limits.DEFAULTS.outputBytes();
        long rssBound = 384L << 20;
        String code = """
                import os, sys, time
                chunk = b"x" * (1 << 20)
                n, t0 = 0, time.monotonic()
                while time.monotonic() - t0 < 4.0:
                    n += os.write(1, chunk)
                os.write(2, f"flooded {n}\\n".encode())
                time.sleep(1000)
                """;
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.add("-Xmx64m");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("dev.airlock.cli.AirlockCli");
        command.addAll(List.of("run", "--runtime", config.runtime(), "--state-dir", config.stateRoot().toString(),
                "--timeout", "6", "--json", "--lang", "python", "--code", code));
        Process cli = new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Thread outPump = pump(cli.getInputStream(), out);
        Thread errPump = pump(cli.getErrorStream(), err);
        long peak = 0;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (cli.isAlive() && System.nanoTime() < deadline) {
                peak = Math.max(peak, HostProcesses.rss(cli.pid()));
                cli.waitFor(20, TimeUnit.MILLISECONDS);
            }
            if (cli.isAlive()) {
                return Outcome.broken("the flooded 'airlock run' did not end within 120s of a 6s timeout");
            }
            outPump.join(5_000);
            errPump.join(5_000);
            String stdout = text(out);
            JsonNode result;
            try {
                result = JsonMapper.builder().build().readTree(stdout);
            } catch (RuntimeException e) {
                return Outcome.broken("the flooded 'airlock run' (64 MiB heap) exited " + cli.exitValue() + " without its JSON result; stderr "
                        + Printable.quoted(text(err), Findings.SHOWN_CHARS));
            }
            long flooded = parseFlooded(result.path("stderr").asString(""));
            int kept = result.path("stdout").asString("").getBytes(StandardCharsets.UTF_8).length;
            String happened = "a program wrote " + (flooded < 0 ? "an unknown amount" : String.format("%.2f GiB", flooded / (double) (1L << 30)))
                    + " to stdout in 4s under an 'airlock run' with a 64 MiB heap; the run ended " + result.path("endReason").asString("?")
                    + ", exit code " + result.path("exitCode").asInt() + ", kept " + kept + " bytes of stdout (truncated "
                    + result.path("truncated").asBoolean() + "); the CLI's resident memory peaked at " + (peak >> 20) + " MiB (bound "
                    + (rssBound >> 20) + " MiB)";
            if (flooded < 64 * limit) {
                return Outcome.error(happened + "; the flood was too small (under 64 times the output limit) to prove anything");
            }
            List<String> problems = new ArrayList<>();
            if (!"timed_out".equals(result.path("endReason").asString())) {
                problems.add("the run ended " + result.path("endReason").asString() + ", expected timed_out");
            }
            if (!result.path("truncated").asBoolean() || kept != limit) {
                problems.add("stdout kept " + kept + " bytes, expected exactly the limit of " + limit + ", marked truncated");
            }
            if (peak > rssBound) {
                problems.add("the CLI's resident memory grew to " + (peak >> 20) + " MiB while the sandbox flooded its channel");
            }
            String sandboxId = result.path("sandboxId").asString("");
            if (sandboxId.startsWith("al-")) {
                problems.addAll(leftovers(config, sandboxId));
            }
            return verdict(happened, problems);
        } finally {
            cli.destroyForcibly();
            cli.waitFor(30, TimeUnit.SECONDS);
            cleanUp(config);
        }
    }

    private static long parseFlooded(String stderr) {
        for (String line : stderr.split("\n")) {
            if (line.startsWith("flooded ")) {
                try {
                    return Long.parseLong(line.substring(8).trim());
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
        }
        return -1;
    }

    /**
     * (4) The state directory's file system is full (a 1 MiB tmpfs mounted by verify and filled):
     * creating a sandbox fails with a clear error and leaves nothing; once space is freed a sandbox
     * starts again. The tmpfs is always unmounted.
     */
    private Outcome diskFull(OciDriverConfig config) throws IOException, InterruptedException {
        Path state = config.stateRoot();
        Files.createDirectories(state);
        String mounted = command("mount", "-t", "tmpfs", "-o", "size=1m,mode=0711", "tmpfs", state.toString());
        if (mounted != null) {
            return Outcome.error("cannot mount a 1 MiB tmpfs at " + state + " (verify needs root): " + mounted);
        }
        mountedTmpfs = state;
        try {
            List<String> problems = new ArrayList<>();
            StringBuilder happened = new StringBuilder("mounted a 1 MiB tmpfs as the state directory");
            try (Engine engine = new Engine(new OciDriver(config))) {
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
                List<String> leaks = new LeakCheck(config).find(prefix);
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
                problems.addAll(leftovers(config, prefix));
            }
            return verdict(happened.toString(), problems);
        } finally {
            if (command("umount", state.toString()) != null) {
                command("umount", "-l", state.toString());
            }
            mountedTmpfs = null;
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

    private static Path shortTempDirectory() throws IOException {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        java.security.SecureRandom random = new java.security.SecureRandom();
        Path parent = Path.of(System.getProperty("java.io.tmpdir"));
        for (int attempt = 0; attempt < 100; attempt++) {
            StringBuilder name = new StringBuilder("alv-");
            for (int i = 0; i < 6; i++) {
                name.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            try {
                return Files.createDirectory(parent.resolve(name.toString()));
            } catch (java.nio.file.FileAlreadyExistsException taken) {
                // try another name
            }
        }
        throw new IOException("cannot create a temporary directory under " + parent);
    }

    /** What {@link LeakCheck} finds of the sandboxes with {@code prefix}, and engine state left in the directory. */
    private static List<String> leftovers(OciDriverConfig config, String prefix) {
        List<String> problems = new ArrayList<>();
        List<String> leaks = new LeakCheck(config).find(prefix);
        if (!leaks.isEmpty()) {
            problems.add("left behind: " + String.join("; ", leaks));
        }
        Path engines = config.stateRoot().resolve("engines");
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

    private static Outcome verdict(String happened, List<String> problems) {
        if (problems.isEmpty()) {
            return Outcome.held(happened + "; nothing is left behind");
        }
        return Outcome.broken(happened + "\n" + String.join("\n", problems));
    }

    /** Whatever a scenario left, so the temporary directory can go: a fresh engine reaps dead instances. */
    private static void cleanUp(OciDriverConfig config) {
        try (Stream<Path> s = Files.list(config.stateRoot().resolve("engines"))) {
            if (s.findAny().isEmpty()) {
                return;
            }
        } catch (IOException e) {
            return;
        }
        try {
            new Engine(new OciDriver(config)).close();
        } catch (RuntimeException e) {
            // best effort: the temporary directory is removed anyway
        }
    }

    /** The instance name of the only engine under the state directory. */
    private static String onlyInstance(OciDriverConfig config) throws IOException {
        try (Stream<Path> s = Files.list(config.stateRoot().resolve("engines"))) {
            List<Path> instances = s.toList();
            if (instances.size() != 1) {
                throw new IOException("expected one engine instance under " + config.stateRoot() + ", found " + instances);
            }
            return instances.getFirst().getFileName().toString();
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

    private static Thread pump(InputStream in, ByteArrayOutputStream sink) {
        return Thread.ofVirtual().start(() -> {
            byte[] buf = new byte[8192];
            try {
                int n;
                while ((n = in.read(buf)) > 0) {
                    synchronized (sink) {
                        sink.write(buf, 0, n);
                    }
                }
            } catch (IOException ignored) {
                // the process ended
            }
        });
    }

    private static String text(ByteArrayOutputStream out) {
        synchronized (out) {
            return out.toString(StandardCharsets.UTF_8);
        }
    }

}
