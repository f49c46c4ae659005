package dev.airlock.client;

import java.util.Objects;
import java.util.function.Consumer;

/**
 * Receives a process's output while it runs, with
 * {@link RemoteSandbox#exec(Exec, OutputHandler)}: use it to show progress or to react before the
 * process ends. Chunks arrive in order, as the server forwarded them, on the calling thread; they
 * are not split at line boundaries. A handler that throws stops the execution: the stream is
 * closed, which makes the server kill the process, and the exception propagates.
 */
public interface OutputHandler {

    /** A chunk the process wrote to standard output. */
    default void stdout(String chunk) {
    }

    /** A chunk the process wrote to standard error. */
    default void stderr(String chunk) {
    }

    /** A handler from two consumers, for lambdas. */
    static OutputHandler of(Consumer<String> stdout, Consumer<String> stderr) {
        Objects.requireNonNull(stdout, "stdout");
        Objects.requireNonNull(stderr, "stderr");
        return new OutputHandler() {
            @Override
            public void stdout(String chunk) {
                stdout.accept(chunk);
            }

            @Override
            public void stderr(String chunk) {
                stderr.accept(chunk);
            }
        };
    }
}
