package dev.airlock.core;

import java.io.IOException;
import java.time.Duration;

/**
 * The host side of the in-sandbox agent: starts processes and places files inside one sandbox,
 * seen through the sandbox's own view of its filesystem. Every driver gives the same agent, so
 * the engine never depends on how the sandbox is isolated. Everything the agent sends is treated
 * as hostile: frames are bounded and malformed input closes the channel.
 */
public interface SandboxAgent extends AutoCloseable {

    /**
     * Starts {@code request.argv()} in a new session and process group. The process's environment
     * is exactly {@code request.env()}. Output is passed to {@code listener} as it arrives.
     */
    AgentProcess start(ExecRequest request, OutputListener listener) throws IOException;

    /**
     * Creates or replaces a regular file inside the sandbox, creating missing parent directories.
     * The agent refuses to follow a symlink in the last component.
     */
    void writeFile(String path, byte[] content, int mode) throws IOException;

    /** Whether the channel to the agent is still open. */
    boolean isOpen();

    /** Closes the channel. The agent answers by killing every process in the sandbox and exiting. */
    @Override
    void close();

    /** One process started through the agent. */
    interface AgentProcess {

        int pid();

        /** Appends to the process's standard input. */
        void writeStdin(byte[] bytes) throws IOException;

        /** Closes the process's standard input (the process reads end-of-file). */
        void closeStdin() throws IOException;

        /** Sends {@code signal} to the process's whole process group. */
        void signal(int signal) throws IOException;

        /**
         * Waits until the process has exited and its output has been delivered.
         *
         * @return the exit, or {@code null} if {@code timeout} passed first
         * @throws IOException if the channel to the agent broke before the exit was reported
         */
        ProcessExit await(Duration timeout) throws InterruptedException, IOException;
    }

    /**
     * How a process ended: {@code signal} is 0 when it exited with {@code exitCode}; otherwise the
     * signal that killed it. {@code startError} is non-null when the program could not be started.
     */
    record ProcessExit(int exitCode, int signal, String startError) {
    }
}
