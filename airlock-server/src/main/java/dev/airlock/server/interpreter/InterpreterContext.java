package dev.airlock.server.interpreter;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Printable;
import dev.airlock.server.command.CellResult;
import dev.airlock.server.command.Command;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.wire.Json;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One interpreter context: a long-lived IPython kernel inside a sandbox, driven by the bridge
 * program {@code interpreter.py} (a resource beside this class), which the server starts through
 * the agent like any process but with its standard input kept open. The server writes one JSON
 * request per cell on the bridge's stdin and reads its JSON lines from stdout; the kernel keeps
 * variables, imports and files between cells.
 *
 * <p>Everything the bridge writes is as untrusted as the cell's code (they run as the same user):
 * lines are bounded, unknown or malformed ones dropped, and each cell keeps at most the sandbox's
 * output limit of outputs, the rest dropped and the cell marked truncated. Cells run one at a time;
 * a second waits for the first. A timeout or a cancel interrupts the cell (KeyboardInterrupt) and
 * the context lives on; a kernel that died is reported, and {@link #close} plus a new context under
 * the same id is a restart.
 */
public final class InterpreterContext {

    /** Where the bridge and each context's state (connection files, IPython and matplotlib dirs) live in the sandbox. */
    static final String DIR = "/tmp/.airlock-interpreter";
    static final String BRIDGE = DIR + "/bridge.py";
    /** How long a kernel may take to start (a cold start of a loaded host takes a few seconds). */
    static final Duration START_TIMEOUT = Duration.ofSeconds(120);
    /** How long past a cell's timeout the bridge gets to report the interrupted cell before it is given up as dead. */
    static final Duration GRACE = Duration.ofSeconds(15);
    /** The bridge lives as long as its sandbox: this is only the execution's nominal budget. */
    private static final Duration LIFETIME = Duration.ofDays(365);
    /** What a line may hold beyond a cell's output budget (the JSON around the outputs). */
    private static final int LINE_SLACK = 64 * 1024;
    private static final byte[] BRIDGE_SOURCE = bridgeSource();
    /** How Python says that an import failed; the module is the first word between the quotes (a.b: a package's module). */
    private static final Pattern MISSING_MODULE = Pattern.compile("No module named '([A-Za-z0-9_.]{1,100})'");

    private final String id;
    /** What every line of this context's bridge carries ("n"): a line without it did not come from the bridge. */
    private final String nonce = java.util.HexFormat.of().formatHex(randomBytes(16));
    private final Instant createdAt = Instant.now();
    private final ManagedSandbox sandbox;
    private final long budget;
    private final Lines lines;
    private final Execution bridge;
    private final CompletableFuture<JsonNode> started = new CompletableFuture<>();
    private final ReentrantLock running = new ReentrantLock();
    private volatile PendingCell current;
    private volatile String deadMessage;
    private volatile int cells;
    private long nextCell = 1;

    private static final java.security.SecureRandom RANDOM = new java.security.SecureRandom();

    private static byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return b;
    }

    private InterpreterContext(String id, ManagedSandbox sandbox) {
        this.id = id;
        this.sandbox = sandbox;
        this.budget = sandbox.sandbox().spec().limits().outputBytes();
        this.lines = new Lines((int) Math.min(Integer.MAX_VALUE - LINE_SLACK, budget) + LINE_SLACK);
        sandbox.sandbox().writeFile(BRIDGE, BRIDGE_SOURCE);
        // the nonce goes on stdin, never on the command line, which any process of the sandbox can read
        ExecRequest request = new ExecRequest(List.of("python3", BRIDGE, DIR + "/" + id, Long.toString(budget)), Map.of(),
                ExecRequest.DEFAULT_CWD, (nonce + "\n").getBytes(StandardCharsets.US_ASCII), LIFETIME);
        this.bridge = sandbox.sandbox().startAttached(request, lines);
        Thread.ofVirtual().name("airlock-interpreter-" + sandbox.id() + "-" + id).start(this::watch);
    }

    /**
     * Starts a context's bridge and kernel in {@code sandbox} and waits until the kernel answers.
     *
     * @throws AirlockException UNAVAILABLE when the kernel cannot start (the image lacks
     *                          python3-ipykernel, say), with the bridge's reason
     */
    static InterpreterContext start(String id, ManagedSandbox sandbox) {
        InterpreterContext c = new InterpreterContext(id, sandbox);
        try {
            JsonNode ready = c.started.get(START_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            if ("ready".equals(ready.path("type").asString(""))) {
                return c;
            }
            c.close();
            String module = c.lines.missingModule();
            if (module != null) {
                throw new AirlockException(Kind.INVALID_ARGUMENT, "the interpreter cannot run in sandbox " + sandbox.id() + ": its image '"
                        + Printable.of(sandbox.sandbox().spec().image(), 200) + "' has no Python module '" + module + "' (the interpreter needs"
                        + " Python's standard library, ipykernel and jupyter_client): use an image that has them (airlock image build"
                        + " python-data makes one), or add python3, python3-ipykernel and python3-jupyter-client to the packages of"
                        + " your image's recipe");
            }
            throw new AirlockException(Kind.UNAVAILABLE, "the interpreter could not start in sandbox " + sandbox.id() + ": "
                    + Printable.of(ready.path("message").asString("it ended without saying why"), 2000)
                    + " (the sandbox's image needs python3 with Debian's python3-ipykernel and python3-jupyter-client)");
        } catch (TimeoutException e) {
            c.close();
            throw new AirlockException(Kind.UNAVAILABLE, "the interpreter's kernel did not answer within " + START_TIMEOUT.toSeconds()
                    + " s in sandbox " + sandbox.id() + ": the host may be overloaded, or the sandbox's memory too small; try again");
        } catch (InterruptedException e) {
            c.close();
            Thread.currentThread().interrupt();
            throw new AirlockException(Kind.CONFLICT, "creating the context was cancelled");
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        }
    }

    public String id() {
        return id;
    }

    /** The context as a client sees it now. */
    Command.InterpreterContextView view() {
        String state = deadMessage != null ? "dead" : running.isLocked() ? "busy" : "ready";
        return new Command.InterpreterContextView(id, "python", state, createdAt, cells, deadMessage);
    }

    /**
     * Runs one cell and returns its outputs; waits while another cell of this context runs.
     * Interrupting the calling thread interrupts the cell in the kernel and returns it as
     * {@code interrupted}, with the thread's interrupt flag set again.
     */
    CellResult run(String code, Duration timeout, CellResult.Listener listener) {
        try {
            running.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AirlockException(Kind.CONFLICT, "cancelled while waiting for the context's running cell to end");
        }
        try {
            if (deadMessage != null) {
                throw dead();
            }
            long started = System.nanoTime();
            PendingCell cell = new PendingCell(nextCell++, listener, budget);
            current = cell;
            cells++;
            ObjectNode request = Json.object().put("id", cell.number).put("code", code).put("timeoutSeconds", timeout.toMillis() / 1000.0);
            send(request);
            boolean interrupted = false;
            long waitNanos = timeout.plus(GRACE).toNanos();
            try {
                if (!cell.done.await(waitNanos, TimeUnit.NANOSECONDS)) {
                    cell.finish("dead", "the kernel did not report the end of the cell " + GRACE.toSeconds() + " s after its timeout:"
                            + " restart the context");
                }
            } catch (InterruptedException e) {
                interrupted = true;
                send(Json.object().put("interrupt", cell.number));
                try {
                    if (!cell.done.await(GRACE.toNanos(), TimeUnit.NANOSECONDS)) {
                        cell.finish("dead", "the kernel did not stop " + GRACE.toSeconds() + " s after an interrupt: restart the context");
                    }
                } catch (InterruptedException again) {
                    cell.finish("interrupted", "cancelled");
                }
            }
            current = null;
            if ("dead".equals(cell.status) && deadMessage == null) {
                deadMessage = cell.message;
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            return cell.result(id, Duration.ofNanos(System.nanoTime() - started));
        } finally {
            running.unlock();
        }
    }

    private AirlockException dead() {
        return new AirlockException(Kind.CONFLICT, "context " + id + " of sandbox " + sandbox.id() + " is dead (" + deadMessage
                + "): restart it (POST /v1/sandboxes/" + sandbox.id() + "/contexts/" + id + "/restart) or delete it");
    }

    private void send(ObjectNode request) {
        try {
            bridge.writeStdin((request.toString() + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            if (!sandbox.sandbox().isOpen()) {
                throw new AirlockException(Kind.CONFLICT, "sandbox " + sandbox.id() + " is destroyed: create a new one");
            }
            deadMessage = "its bridge process is gone";
            throw dead();
        }
    }

    /** Ends the kernel: closes the bridge's input (it shuts the kernel down), and kills what remains after a grace period. */
    void close() {
        bridge.closeStdin();
        Thread.ofVirtual().start(() -> {
            try {
                Thread.sleep(5_000);
            } catch (InterruptedException e) {
                // kill now
            }
            if (!bridge.isDone()) {
                bridge.signal(9);
            }
        });
    }

    /** Waits for the bridge's end: then the context is dead, and a cell waiting on it ends as such. */
    private void watch() {
        ExecResult r = bridge.await();
        String why = r.endReason() == dev.airlock.core.EndReason.EXITED ? "its bridge exited with status " + r.exitCode()
                : Printable.of(r.message() == null ? r.endReason().name() : r.message());
        if (deadMessage == null) {
            deadMessage = "the kernel ended: " + why + (lines.stderrTail().isBlank() ? "" : "; it said: " + lines.stderrTail());
        }
        started.complete(Json.object().put("type", "failed").put("message", deadMessage));
        PendingCell cell = current;
        if (cell != null) {
            cell.finish("dead", deadMessage + ": restart the context; its variables are lost");
        }
    }

    /** One bridge line, parsed on the agent's reader thread: hand it to whom it concerns, never block. */
    private void line(JsonNode line) {
        if (!nonce.equals(line.path("n").asString(""))) {
            return;   // not the bridge's: the cell's code cannot know the nonce
        }
        String type = line.path("type").asString("");
        if (type.equals("ready") || type.equals("failed")) {
            started.complete(line);
            return;
        }
        PendingCell cell = current;
        if (cell == null || !line.path("id").canConvertToLong() || line.path("id").asLong() != cell.number) {
            return; // a stale line of a cell given up on, or noise
        }
        cell.accept(type, line);
    }

    /** Splits the bridge's stdout into lines within a bound; keeps the last of its stderr for a failure message. */
    private final class Lines implements OutputListener {
        private final int maxLine;
        private final ByteArrayOutputStream line = new ByteArrayOutputStream();
        private boolean overlong;
        private final byte[] stderrTail = new byte[2048];
        private int stderrLength;

        Lines(int maxLine) {
            this.maxLine = maxLine;
        }

        @Override
        public void stdout(byte[] chunk) {
            int from = 0;
            for (int i = 0; i < chunk.length; i++) {
                if (chunk[i] == '\n') {
                    append(chunk, from, i - from);
                    end();
                    from = i + 1;
                }
            }
            append(chunk, from, chunk.length - from);
        }

        private void append(byte[] chunk, int from, int length) {
            if (overlong || length == 0) {
                return;
            }
            if (line.size() + length > maxLine) {
                overlong = true;
                line.reset();
                return;
            }
            line.write(chunk, from, length);
        }

        private void end() {
            if (overlong) {
                overlong = false;
                PendingCell cell = current;
                if (cell != null) {
                    cell.truncated = true;
                }
                return;
            }
            byte[] bytes = line.toByteArray();
            line.reset();
            JsonNode node;
            try {
                node = Json.MAPPER.readTree(bytes);
            } catch (JacksonException e) {
                return;
            }
            if (node != null && node.isObject()) {
                line(node);
            }
        }

        @Override
        public synchronized void stderr(byte[] chunk) {
            for (byte b : chunk) {
                if (stderrLength == stderrTail.length) {
                    System.arraycopy(stderrTail, 1, stderrTail, 0, stderrTail.length - 1);
                    stderrLength--;
                }
                stderrTail[stderrLength++] = b;
            }
        }

        /** The last 1000 characters of the bridge's stderr: a traceback's last line says what went wrong. */
        synchronized String stderrTail() {
            String tail = new String(stderrTail, 0, stderrLength, StandardCharsets.UTF_8).strip();
            return tail.length() <= 1000 ? Printable.of(tail) : "..." + Printable.of(tail.substring(tail.length() - 997));
        }

        /** The Python module whose import failed in the bridge ("No module named 'ipykernel'"), or null. */
        synchronized String missingModule() {
            Matcher m = MISSING_MODULE.matcher(new String(stderrTail, 0, stderrLength, StandardCharsets.UTF_8));
            String module = null;
            while (m.find()) {
                module = m.group(1);
            }
            return module;
        }
    }

    private static byte[] bridgeSource() {
        try (InputStream in = InterpreterContext.class.getResourceAsStream("interpreter.py")) {
            if (in == null) {
                throw new IllegalStateException("interpreter.py is missing from the server's jar");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
