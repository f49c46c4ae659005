package dev.airlock.it;

import tools.jackson.databind.JsonNode;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * MCP over stdio by hand: a real {@code airlock mcp} process, driven line by line as a client
 * that starts it as a subprocess would, for tests that need the exact JSON-RPC replies (the
 * TypeScript SDK's client in {@link McpNode} reports only what its scenarios pick). Every wait is
 * bounded, so a server that hangs fails the test instead of stalling it.
 */
final class RawMcpStdio implements AutoCloseable {

    /** Far beyond any healthy answer (a JVM start included): only a hang reaches it. */
    static final Duration TIMEOUT = Duration.ofSeconds(120);
    private static final String END = "\u0000end";

    private final Process process;
    private final OutputStream stdin;
    private final Path stderr;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

    private RawMcpStdio(Process process, Path stderr) {
        this.process = process;
        this.stdin = process.getOutputStream();
        this.stderr = stderr;
        Thread.ofVirtual().name("mcp-stdio-reader").start(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = out.readLine()) != null) {
                    lines.add(line);
                }
            } catch (IOException ignored) {
                // the process ended
            } finally {
                lines.add(END);
            }
        });
    }

    /**
     * Starts {@code airlock mcp} on {@code dataDir} with {@code policy}, acting as {@code client},
     * with no warm pool, and opens the session (initialize, then notifications/initialized).
     */
    static RawMcpStdio open(Path dataDir, Path policy, String client) {
        List<String> command = List.of(ProcessHandle.current().info().command().orElse("java"), "-cp",
                System.getProperty("java.class.path"), dev.airlock.cli.AirlockCli.class.getName(), "mcp", "--data-dir", dataDir.toString(),
                "--policy", policy.toString(), "--client", client, "--pool-size", "0");
        try {
            Path stderr = Files.createTempFile("airlock-mcp-stdio", ".err");
            Process p = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
            RawMcpStdio session = new RawMcpStdio(p, stderr);
            try {
                JsonNode init = session.request(1, RawMcp.INITIALIZE);
                if (!init.has("result")) {
                    throw new AssertionError("initialize over stdio answered " + init);
                }
                session.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
                return session;
            } catch (RuntimeException | AssertionError e) {
                session.close();
                throw e;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A tools/call with request id {@code id}; returns the JSON-RPC reply. */
    JsonNode call(int id, String tool, String argumentsJson) {
        return request(id, "{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"method\":\"tools/call\",\"params\":{\"name\":\"" + tool
                + "\",\"arguments\":" + argumentsJson + "}}");
    }

    /** Sends {@code message} and waits for the reply with {@code id}, skipping notifications and other replies. */
    JsonNode request(int id, String message) {
        send(message);
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        try {
            while (true) {
                String line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (line == null) {
                    throw new AssertionError("airlock mcp did not answer request " + id + " within " + TIMEOUT + "\nstderr:\n" + stderr());
                }
                if (line.equals(END)) {
                    throw new AssertionError("airlock mcp closed its stdout before answering request " + id + "\nstderr:\n" + stderr());
                }
                JsonNode n = RawMcp.JSON.readTree(line);
                if (n.path("id").asInt(-1) == id && (n.has("result") || n.has("error"))) {
                    return n;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    private void send(String message) {
        try {
            stdin.write((message + "\n").getBytes(StandardCharsets.UTF_8));
            stdin.flush();
        } catch (IOException e) {
            throw new AssertionError("airlock mcp no longer reads its stdin: " + e + "\nstderr:\n" + stderr(), e);
        }
    }

    String stderr() {
        try {
            return Files.readString(stderr, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /**
     * Ends the session as a client does, by closing stdin, and waits for the process to exit (it
     * destroys the session's sandboxes and writes its audit log first); kills it only if it hangs.
     */
    @Override
    public void close() {
        try {
            try {
                stdin.close();
            } catch (IOException ignored) {
                // already gone
            }
            if (!process.waitFor(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
                String err = stderr();
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                throw new AssertionError("airlock mcp did not exit within " + TIMEOUT + " after its stdin closed\nstderr:\n" + err);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
            throw new AssertionError("interrupted", e);
        } finally {
            try {
                Files.deleteIfExists(stderr);
            } catch (IOException ignored) {
                // a temp file
            }
        }
    }

    /** The exit status, once {@link #close()} returned. */
    int exitCode() {
        return process.exitValue();
    }
}
