package dev.airlock.cli.verify;


import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * An {@code airlock run} in a JVM of its own, as a recovery scenario starts one to kill it or to
 * flood it: this JVM's java and class path, the scenario's runtime and state directory, standard
 * input from /dev/null, and its output collected by virtual threads so it never blocks on a full
 * pipe.
 */
final class ChildCli {

    private final Process process;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final List<Thread> pumps = new ArrayList<>();

    private ChildCli(Process process, boolean stderrMerged) {
        this.process = process;
        pumps.add(pump(process.getInputStream(), out));
        if (!stderrMerged) {
            pumps.add(pump(process.getErrorStream(), err));
        }
    }

    /**
     * Starts {@code airlock run --runtime R --state-dir D} followed by {@code runArguments}.
     *
     * @param jvmOptions  options of the child JVM, such as {@code -Xmx64m}
     * @param mergeStderr true to collect its stderr with its stdout, in {@link #out()}
     */
    static ChildCli start(VerifyTarget target, List<String> jvmOptions, boolean mergeStderr, String... runArguments) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse("java"));
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("dev.airlock.cli.AirlockCli");
        command.addAll(List.of("run", "--runtime", target.runtime(), "--state-dir", target.stateDir().toString()));
        command.addAll(List.of(runArguments));
        Process p = new ProcessBuilder(command).redirectErrorStream(mergeStderr).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        return new ChildCli(p, mergeStderr);
    }

    Process process() {
        return process;
    }

    /** Its stdout so far (with its stderr, when merged). */
    String out() {
        return text(out);
    }

    /** Its stderr so far; empty when merged into {@link #out()}. */
    String err() {
        return text(err);
    }

    /** Waits up to 5 s for each stream to be read to its end, once the process has ended. */
    void awaitOutput() throws InterruptedException {
        for (Thread pump : pumps) {
            pump.join(5_000);
        }
    }

    /** Kills it with SIGKILL and waits up to 30 s for it to end. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
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

    private static String text(ByteArrayOutputStream sink) {
        synchronized (sink) {
            return sink.toString(StandardCharsets.UTF_8);
        }
    }
}
