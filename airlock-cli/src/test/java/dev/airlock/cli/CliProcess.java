package dev.airlock.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The real CLI in its own JVM, as a user runs it, with its output captured. Public, and shipped in
 * airlock-cli's test jar, because the integration tests of airlock-it run the CLI this way too.
 */
public final class CliProcess {

    public final Process process;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final Thread outPump;
    private final Thread errPump;

    private CliProcess(Process process) {
        this.process = process;
        this.outPump = pump(process.getInputStream(), out);
        this.errPump = pump(process.getErrorStream(), err);
    }

    public static CliProcess start(String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(AirlockCli.class.getName());
        command.addAll(List.of(args));
        return new CliProcess(new ProcessBuilder(command).start());
    }

    static final Duration DEFAULT_LIMIT = Duration.ofMinutes(2);

    /** Runs the CLI to its end (at most two minutes). */
    public static CliProcess run(String... args) throws IOException, InterruptedException {
        return run(DEFAULT_LIMIT, args);
    }

    /** Runs the CLI to its end, for at most {@code limit}: for the few commands that take longer by design ({@code bench}). */
    public static CliProcess run(Duration limit, String... args) throws IOException, InterruptedException {
        CliProcess cli = start(args);
        cli.process.getOutputStream().close();
        cli.await(limit);
        return cli;
    }

    /** Waits for the CLI's end (at most two minutes). */
    public int await() throws InterruptedException {
        return await(DEFAULT_LIMIT);
    }

    private int await(Duration limit) throws InterruptedException {
        if (!process.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("the CLI did not finish within " + limit);
        }
        outPump.join();
        errPump.join();
        return process.exitValue();
    }

    /**
     * Ends the CLI as Ctrl-C does: SIGINT. A process started with SIGINT ignored keeps it ignored
     * (a background job of a non-interactive shell, or under nohup, and so its children: this JVM's
     * CLI too); then SIGTERM, which the JVM handles alike (its shutdown hooks run). Returns the
     * signal sent.
     */
    public String interrupt() throws IOException, InterruptedException {
        String signal = ignoresSigint(process.pid()) ? "TERM" : "INT";
        int status = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).start().waitFor();
        if (status != 0) {
            throw new AssertionError("kill -" + signal + " " + process.pid() + " exited " + status);
        }
        return signal;
    }

    /** Whether process {@code pid} ignores SIGINT (its SigIgn mask in /proc, bit 1 for signal 2). */
    private static boolean ignoresSigint(long pid) throws IOException {
        for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc", Long.toString(pid), "status"))) {
            if (line.startsWith("SigIgn:")) {
                return (Long.parseUnsignedLong(line.substring(7).strip(), 16) & 2) != 0;
            }
        }
        throw new AssertionError("no SigIgn line in /proc/" + pid + "/status");
    }

    public int exitCode() {
        return process.exitValue();
    }

    public String stdout() {
        synchronized (out) {
            return out.toString(StandardCharsets.UTF_8);
        }
    }

    public String stderr() {
        synchronized (err) {
            return err.toString(StandardCharsets.UTF_8);
        }
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
}
