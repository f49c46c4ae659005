package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One {@code airlock-launch serve} for all of this process's sandbox starts: a start is a line on
 * its stdin, carried out by a fork of that small process, and answered on its stdout with the
 * sandbox's PID 1. A JVM that ran {@code airlock-launch run} once per start paid for a new process
 * each time (the JDK's spawn helper, then the launcher's exec): that was about as much of the host's
 * time as the launcher's own work.
 *
 * <p>Only this process holds the server's stdin and stdout (pipes, no path to them). The server
 * ends when its stdin closes, as when this process ends; one that ended otherwise fails the starts
 * it had and is started again by the next one. Starts in flight are bounded by the server
 * ({@link #MAX_STARTS}: past it a start is refused at once) and each by time ({@link #START_SECONDS},
 * after which its process and its sandbox's PID 1 are killed).
 */
final class LaunchServer {

    /** The most starts the server runs at once ({@code MAX_STARTS} of launch.c, its ceiling): one more is answered "busy". */
    static final int MAX_STARTS = 256;
    /** The longest the server lets one start run ({@code START_SECONDS} of launch.c, its ceiling) before it kills it. */
    static final int START_SECONDS = 60;

    private final Path binary;
    private final int maxStarts;
    private final int startSeconds;
    /** The starts waiting for their answer, by sandbox id, each with the server it was given to. */
    private final Map<String, Pending> waiting = new ConcurrentHashMap<>();
    private Process process;
    private OutputStream requests;

    LaunchServer(Path binary) {
        this(binary, MAX_STARTS, START_SECONDS);
    }

    /** A server with other bounds than the host's (its tests): at most {@code maxStarts} at once, each at most {@code startSeconds}. */
    LaunchServer(Path binary, int maxStarts, int startSeconds) {
        this.binary = binary;
        this.maxStarts = maxStarts;
        this.startSeconds = startSeconds;
    }

    /**
     * Starts the sandbox of launch spec {@code spec} (its reasons for failing appended to {@code
     * log}) and returns the host pid of its PID 1, which runs the agent; waits even when the caller
     * is being cancelled, as {@link OciRuntime#run} does: a start half seen would leave a sandbox behind.
     */
    long start(String id, Path spec, Path log) {
        Pending pending = submit(id, spec, log);
        CompletableFuture<Long> answer = pending.answer();
        boolean interrupted = Thread.interrupted();
        try {
            // a little longer than the server lets the start run: it answers for a start it killed
            long waitSeconds = startSeconds + 5L;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(waitSeconds);
            while (true) {
                try {
                    return answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (TimeoutException e) {
                    throw AirlockException.internal("airlock-launch did not answer for sandbox " + id + " within " + waitSeconds + " s", null);
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof AirlockException refused ? refused
                            : AirlockException.unavailable("airlock-launch could not start sandbox " + id + ": " + OciRuntime.lastError(log)
                                    + " (run 'airlock doctor' to see what this host supports)");
                }
            }
        } finally {
            waiting.remove(id, pending);
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private synchronized Pending submit(String id, Path spec, Path log) {
        String request = id + "\t" + spec + "\t" + log + "\n";
        if (request.chars().filter(c -> c == '\t' || c == '\n').count() != 3) {
            throw AirlockException.internal("sandbox " + id + ": its id or paths hold a tab or a newline", null);
        }
        try {
            if (process == null || !process.isAlive()) {
                open();
            }
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot start " + binary + " serve: " + e.getMessage());
        }
        Pending pending = new Pending(process, new CompletableFuture<>());
        if (waiting.putIfAbsent(id, pending) != null) {
            throw AirlockException.internal("sandbox " + id + " is being started already", null);
        }
        try {
            requests.write(request.getBytes(StandardCharsets.UTF_8));
            requests.flush();
            return pending;
        } catch (IOException e) {
            waiting.remove(id);
            process.destroyForcibly();
            throw AirlockException.unavailable("cannot reach airlock-launch serve to start sandbox " + id + ": " + e.getMessage());
        }
    }

    /**
     * Lets the server end once its starts in flight have: its stdin closes. A start after this
     * starts a new server. This process's exit would end it too; closed first, no thread of this
     * process is left reading its answers, which would hold up the JVM's exit.
     */
    synchronized void close() {
        if (process != null) {
            try {
                requests.close();
            } catch (IOException e) {
                process.destroyForcibly();
            }
            process = null;
        }
    }

    private void open() throws IOException {
        Process p = new ProcessBuilder(binary.toString(), "serve", Integer.toString(maxStarts), Integer.toString(startSeconds))
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        process = p;
        requests = p.getOutputStream();
        Thread.ofPlatform().daemon().name("airlock-launch-answers").start(() -> readAnswers(p));
    }

    /** Each answer line completes its start; once the server's stdout ends, every start given to it and still waiting fails. */
    private void readAnswers(Process server) {
        try (BufferedReader answers = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = answers.readLine()) != null) {
                int tab = line.indexOf('\t');
                String id = tab < 0 ? line : line.substring(0, tab);
                Pending pending = waiting.get(id);
                if (pending != null && !answered(pending.answer(), id, line.substring(tab + 1))) {
                    break; // a server that says what it should not is not trusted with another start
                }
            }
        } catch (IOException e) {
            // the server is gone: below
        }
        server.destroyForcibly();
        synchronized (this) {
            if (process == server) {
                process = null;
            }
        }
        waiting.values().stream().filter(p -> p.server() == server).forEach(p -> p.answer().completeExceptionally(
                AirlockException.unavailable("airlock-launch serve ended before it answered; the next start starts another")));
    }

    /** Completes {@code answer} with what the server said of start {@code id}; false when that was none of its answers. */
    private boolean answered(CompletableFuture<Long> answer, String id, String said) {
        switch (said) {
            // the start's reason is in its log: LaunchServer.start reads it
            case "failed" -> answer.completeExceptionally(new IllegalStateException(said));
            case "busy" -> answer.completeExceptionally(new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED,
                    "this host is starting " + maxStarts + " sandboxes at once already (airlock-launch's bound): sandbox " + id
                            + " was not started; try again once some have"));
            case "timed-out" -> answer.completeExceptionally(AirlockException.unavailable("airlock-launch did not start sandbox " + id
                    + " within " + startSeconds + " s and killed the start (a bind source on a file system that does not answer?)"));
            default -> {
                try {
                    answer.complete(Long.parseLong(said));
                } catch (NumberFormatException e) {
                    answer.completeExceptionally(AirlockException.internal("airlock-launch serve answered '" + Printable.of(said, 100)
                            + "' for sandbox " + id + ", which is not an answer of this version: the server was stopped", null));
                    return false;
                }
            }
        }
        return true;
    }

    private record Pending(Process server, CompletableFuture<Long> answer) {
    }
}
