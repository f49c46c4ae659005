package dev.airlock.it;

import dev.airlock.cli.AirlockCli;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The real clients from npm (src/test/node: MCP's TypeScript SDK, the Inspector CLI, the
 * conformance suite; E2B's TypeScript SDKs), installed with {@code npm ci} from the committed lock file into
 * target/mcp-node on first use, and run with Node.
 */
final class McpNode {

    private static final Path SOURCES = Path.of("src/test/node").toAbsolutePath();
    static final Path HOME = Path.of("target/mcp-node").toAbsolutePath();
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private McpNode() {
    }

    /** Installs the locked packages once (again only when the lock file changes) and copies the scripts. */
    static synchronized Path install() throws IOException, InterruptedException {
        Files.createDirectories(HOME);
        for (String name : List.of("package.json", "package-lock.json", "mcp-client.mjs", "auth-proxy.mjs", "e2b-client.mjs")) {
            Files.copy(SOURCES.resolve(name), HOME.resolve(name), StandardCopyOption.REPLACE_EXISTING);
        }
        Path marker = HOME.resolve("node_modules/.airlock-lock");
        String lock = Files.readString(SOURCES.resolve("package-lock.json"));
        if (Files.exists(marker) && Files.readString(marker).equals(lock)) {
            return HOME;
        }
        Result npm = run(List.of("npm", "ci", "--no-audit", "--no-fund"), Map.of(), Duration.ofMinutes(10));
        if (npm.exitCode() != 0) {
            throw new AssertionError("npm ci failed (exit " + npm.exitCode() + "):\n" + npm.stderr());
        }
        Files.writeString(marker, lock);
        return HOME;
    }

    record Result(int exitCode, String stdout, String stderr) {
        JsonNode json() {
            String last = stdout.strip();
            int line = last.lastIndexOf('\n');
            try {
                return JSON.readTree(line < 0 ? last : last.substring(line + 1));
            } catch (RuntimeException e) {
                throw new AssertionError("not JSON (exit " + exitCode + "): " + stdout + "\nstderr:\n" + stderr, e);
            }
        }
    }

    /** Runs the TypeScript SDK client through {@code scenarios}; returns its JSON report. */
    static JsonNode client(Map<String, String> env, String... scenarios) throws IOException, InterruptedException {
        install();
        List<String> command = new ArrayList<>(List.of("node", "mcp-client.mjs"));
        command.addAll(List.of(scenarios));
        Result r = run(command, env, Duration.ofMinutes(10));
        if (r.exitCode() != 0) {
            throw new AssertionError("the MCP client failed (exit " + r.exitCode() + "):\n" + r.stderr());
        }
        return r.json();
    }

    /** The command that starts {@code airlock mcp} from the test class path. */
    static List<String> airlockMcp(Path dataDir) {
        return List.of(ProcessHandle.current().info().command().orElse("java"), "-cp", System.getProperty("java.class.path"),
                AirlockCli.class.getName(), "mcp", "--data-dir", dataDir.toString(), "--pool-size", "1");
    }

    static Result run(List<String> command, Map<String, String> env, Duration timeout) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(HOME.toFile());
        pb.environment().putAll(env);
        Path out = Files.createTempFile(HOME, "out", ".txt");
        Path err = Files.createTempFile(HOME, "err", ".txt");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile()).redirectInput(ProcessBuilder.Redirect.PIPE);
        Process p = pb.start();
        p.getOutputStream().close();
        try {
            if (!p.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                throw new AssertionError(String.join(" ", command) + " did not finish within " + timeout
                        + "\nstderr:\n" + Files.readString(err, StandardCharsets.UTF_8));
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    static String json(Object value) {
        return JSON.writeValueAsString(value);
    }
}
