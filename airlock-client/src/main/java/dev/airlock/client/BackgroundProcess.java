package dev.airlock.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A process started with {@link RemoteSandbox#start(Exec)} that keeps running (until its timeout)
 * without a request waiting for it: a server, a watcher, a long build. The accessors show the last
 * state fetched from the server; {@link #refresh()} fetches again, {@link #waitFor(Duration)}
 * polls until it ended. It dies with its sandbox.
 */
public final class BackgroundProcess {

    /** What the server said about the process at one moment. */
    record Snapshot(String id, List<String> command, String state, Instant startedAt, ExecResult result) {
    }

    private final Transport transport;
    private final String sandboxId;
    private volatile Snapshot snapshot;

    BackgroundProcess(Transport transport, String sandboxId, Snapshot snapshot) {
        this.transport = transport;
        this.sandboxId = sandboxId;
        this.snapshot = snapshot;
    }

    /** The server's id of the process, such as {@code p-3}; unique within its sandbox. */
    public String id() {
        return snapshot.id();
    }

    public String sandboxId() {
        return sandboxId;
    }

    /** The command line it runs (for code, the interpreter and the code file). */
    public List<String> command() {
        return snapshot.command();
    }

    /** The state last fetched, such as {@code running}. */
    public String state() {
        return snapshot.state();
    }

    public Instant startedAt() {
        return snapshot.startedAt();
    }

    /** Whether it was still running when last fetched: it had no result yet. */
    public boolean isRunning() {
        return snapshot.result() == null;
    }

    /** Its result as last fetched; empty while it runs. Call {@link #refresh()} for news. */
    public Optional<ExecResult> result() {
        return Optional.ofNullable(snapshot.result());
    }

    /** Fetches the current state from the server. */
    public BackgroundProcess refresh() {
        snapshot = transport.json("GET", path(), null, false, Json::process);
        return this;
    }

    /**
     * Polls until the process ended or {@code timeout} passed, whichever is first.
     *
     * @return the result, or empty if it still runs
     */
    public Optional<ExecResult> waitFor(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        long pause = 20;
        while (refresh().isRunning()) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return Optional.empty();
            }
            try {
                Thread.sleep(Math.min(pause, Math.max(1, left / 1_000_000)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AirlockInterruptedException("interrupted while waiting for process " + id() + " in " + sandboxId, e);
            }
            pause = Math.min(pause * 2, 500);
        }
        return result();
    }

    /**
     * Streams all the process has written to stdout so far (up to the sandbox's output limit) to
     * {@code out}, which is not closed. A result carries only the first 64 KiB of each stream.
     *
     * @return the number of bytes copied
     */
    public long stdout(OutputStream out) {
        return download("stdout", out);
    }

    /** Like {@link #stdout(OutputStream)}, for stderr. */
    public long stderr(OutputStream out) {
        return download("stderr", out);
    }

    private long download(String stream, OutputStream out) {
        Objects.requireNonNull(out, "out");
        HttpResponse<InputStream> r = transport.open(transport.request(path() + "/" + stream, true)
                .header("Accept", "application/octet-stream").GET().build());
        try (InputStream in = r.body()) {
            return in.transferTo(out);
        } catch (IOException e) {
            throw transport.broken(Transport.describe(r.request()), e);
        }
    }

    /**
     * Attaches to the terminal of this process (started with one: {@link RemoteSandbox#startTerminal})
     * over a WebSocket: its output from now on goes to {@code listener}. A process may have a few
     * attached at once (4; 16 per sandbox).
     *
     * @throws ConflictException if the process has no terminal or has ended
     */
    public Terminal attach(Terminal.Listener listener) {
        return Terminal.open(transport, path() + "/attach", this, Objects.requireNonNull(listener, "listener"));
    }

    /** Sends a signal to the process, such as 15 (SIGTERM) to ask it to stop. */
    public void signal(int signal) {
        if (signal <= 0 || signal > 64) {
            throw new IllegalArgumentException("signal " + signal + " is not a signal number: give 1 to 64, such as 15 for SIGTERM");
        }
        transport.noContent("POST", path() + "/signal", RequestBodies.object("signal", signal));
    }

    /** Kills the process and everything it started, whatever session or process group they moved to. */
    public void kill() {
        transport.noContent("DELETE", path(), null);
    }

    private String path() {
        return Transport.path("v1", "sandboxes", sandboxId, "processes", snapshot.id());
    }

    @Override
    public String toString() {
        Snapshot s = snapshot;
        return "BackgroundProcess[" + sandboxId + "/" + s.id() + " " + s.command() + " " + s.state() + "]";
    }
}
