package dev.airlock.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One sandbox on an Airlock server: run commands and code in it, move files in and out, and
 * destroy it with {@link #close()}. Use it in try-with-resources so that it is destroyed even when
 * your code fails; if your process dies first, the server destroys it when its ttl or idle timeout
 * runs out. Safe to use from several threads.
 *
 * <pre>{@code
 * try (RemoteSandbox sandbox = airlock.create(SandboxSpec.builder().memory("256m").build())) {
 *     sandbox.files().write("/workspace/in.txt", data);
 *     ExecResult r = sandbox.run(Language.PYTHON, "print(open('/workspace/in.txt').read())");
 * }
 * }</pre>
 */
public final class RemoteSandbox implements AutoCloseable {

    private final Transport transport;
    private final String id;
    private final SandboxInfo created;
    private final SandboxFiles files;
    private final AtomicBoolean closed = new AtomicBoolean();

    RemoteSandbox(Transport transport, SandboxInfo info) {
        this.transport = transport;
        this.id = info.id();
        this.created = info;
        this.files = new SandboxFiles(transport, id);
    }

    /** The sandbox id, such as {@code al-ab12cd34-0123456789abcdef}. */
    public String id() {
        return id;
    }

    /** What the server said when this handle was made (created or attached); see {@link #info()}. */
    public SandboxInfo initialInfo() {
        return created;
    }

    /** The sandbox as it is now: state, expiry, last activity. */
    public SandboxInfo info() {
        return transport.json("GET", path(), null, false, Json::sandbox);
    }

    /** Runs {@code program} with {@code args} (no shell) and waits for its end. */
    public ExecResult exec(String program, String... args) {
        return exec(Exec.command(program, args));
    }

    /**
     * Runs {@code exec} and waits for its end. A process that fails or times out is a normal
     * result, not an exception: check {@link ExecResult#endReason()} and the exit code.
     */
    public ExecResult exec(Exec exec) {
        Objects.requireNonNull(exec, "exec");
        return transport.json("POST", path("exec"), RequestBodies.exec(exec, false), true, Json::result);
    }

    /**
     * Runs {@code exec}, handing its output to {@code handler} while it runs, and returns the
     * result at its end. Interrupting the calling thread abandons the request, which kills the
     * process, and throws {@link AirlockInterruptedException}.
     */
    public ExecResult exec(Exec exec, OutputHandler handler) {
        Objects.requireNonNull(exec, "exec");
        Objects.requireNonNull(handler, "handler");
        return ExecStream.run(transport, path("exec"), exec, handler);
    }

    /** Runs source code with the language's interpreter and waits for its end. */
    public ExecResult run(Language language, String code) {
        return exec(Exec.code(language, code));
    }

    /** Runs source code, streaming its output to {@code handler}. */
    public ExecResult run(Language language, String code, OutputHandler handler) {
        return exec(Exec.code(language, code), handler);
    }

    /**
     * Starts {@code exec} in the background and returns at once. The process runs until it ends or
     * its timeout; it is killed with the sandbox.
     */
    public BackgroundProcess start(Exec exec) {
        Objects.requireNonNull(exec, "exec");
        return new BackgroundProcess(transport, id,
                transport.json("POST", path("exec"), RequestBodies.exec(exec, true), false, Json::process));
    }

    /**
     * Starts {@code exec} in the background on a pseudo-terminal of {@code rows} x {@code cols}
     * (1 to 1000; an interactive shell, or any program that wants a terminal) and attaches to it:
     * what it shows goes to {@code listener}; write its input, resize it and wait for its exit
     * with the returned {@link Terminal}. Its stderr is the terminal too: one stream.
     *
     * <pre>{@code
     * try (Terminal t = sandbox.startTerminal(Exec.command("bash"), 24, 80, bytes -> System.out.write(bytes, 0, bytes.length))) {
     *     t.write("echo $((6*7))\n");
     *     t.write("exit\n");
     *     t.awaitExit(Duration.ofSeconds(10));
     * }
     * }</pre>
     */
    public Terminal startTerminal(Exec exec, int rows, int cols, Terminal.Listener listener) {
        Objects.requireNonNull(exec, "exec");
        Objects.requireNonNull(listener, "listener");
        Terminal.checkSize(rows, cols);
        var body = RequestBodies.exec(exec, true);
        body.put("tty", true).put("rows", rows).put("cols", cols);
        BackgroundProcess process = new BackgroundProcess(transport, id, transport.json("POST", path("exec"), body, false, Json::process));
        try {
            return process.attach(listener);
        } catch (RuntimeException e) {
            try {
                process.kill();   // nobody could use it: it would only wait for its timeout
            } catch (RuntimeException ignored) {
                // the sandbox is gone too
            }
            throw e;
        }
    }

    /** The background processes of this sandbox, running or ended. */
    public List<BackgroundProcess> processes() {
        return transport.json("GET", path("processes"), null, false, n -> {
            List<BackgroundProcess> out = new ArrayList<>();
            for (var p : new Json.Fields(n, "process list").array("processes")) {
                out.add(new BackgroundProcess(transport, id, Json.process(p)));
            }
            return out;
        });
    }

    /** One background process by its id (such as {@code p-3}). */
    public BackgroundProcess process(String processId) {
        Objects.requireNonNull(processId, "processId");
        return new BackgroundProcess(transport, id,
                transport.json("GET", path("processes", processId), null, false, Json::process));
    }

    /**
     * The sandbox's first interpreter context (a persistent Python kernel), made on first use:
     * {@code sandbox.interpreter().run("df.describe()").html()}.
     */
    public Interpreter interpreter() {
        return new Interpreter(transport, id, null);
    }

    /** The interpreter context {@code contextId} (such as {@code ctx-2}) of this sandbox. */
    public Interpreter interpreter(String contextId) {
        Objects.requireNonNull(contextId, "contextId");
        return new Interpreter(transport, id, contextId);
    }

    /** Starts a new interpreter context (at most 4 per sandbox) and returns it once its kernel is ready. */
    public Interpreter createInterpreter() {
        InterpreterInfo c = transport.json("POST", path("contexts"), Json.MAPPER.createObjectNode(), true, Json::context);
        return new Interpreter(transport, id, c.id());
    }

    /** This sandbox's interpreter contexts, oldest first. */
    public List<InterpreterInfo> interpreters() {
        return transport.json("GET", path("contexts"), null, false, Json::contexts);
    }

    /** The sandbox's files. */
    public SandboxFiles files() {
        return files;
    }

    /**
     * Sets the sandbox to expire {@code ttl} from now (not added to the time left), for work
     * that takes longer than planned. At most {@link SandboxSpec#MAX_TTL}.
     */
    public SandboxInfo extendTtl(Duration ttl) {
        Objects.requireNonNull(ttl, "ttl");
        if (ttl.compareTo(Duration.ofSeconds(1)) < 0 || ttl.compareTo(SandboxSpec.MAX_TTL) > 0) {
            throw new IllegalArgumentException("ttl " + ttl + " is out of range: give 1 s to 24 h");
        }
        return transport.json("POST", path("ttl"),
                RequestBodies.object("ttlSeconds", RequestBodies.wholeSecondsUp(ttl)), false, Json::sandbox);
    }

    /**
     * Freezes every process of the sandbox where it is: it uses no CPU and keeps its memory and
     * files. Until {@link #resume()}, executions, file operations and interpreter cells are refused
     * ({@link ConflictException}); its ttl keeps running, its idle timeout does not. Pausing a
     * paused sandbox changes nothing.
     */
    public SandboxInfo pause() {
        return transport.json("POST", path("pause"), null, false, Json::sandbox);
    }

    /**
     * Pauses the sandbox to disk: its processes, with their memory and in-memory files, are saved
     * on the server's disk and stopped, so it holds no memory until {@link #resume()} restores them
     * where they were (seconds). gVisor profiles only (elsewhere a {@link BadRequestException} names
     * the tier); refused while an execution runs. Destroyed while paused so, its outputs are not
     * collected.
     */
    public SandboxInfo pauseToDisk() {
        return transport.json("POST", path("pause"), RequestBodies.object("toDisk", true), false, Json::sandbox);
    }

    /** Thaws a paused sandbox, or restores one paused to disk: its processes carry on where they stopped. */
    public SandboxInfo resume() {
        return transport.json("POST", path("resume"), null, false, Json::sandbox);
    }

    /**
     * Takes a snapshot of the sandbox's files ({@code /workspace} and {@code /tmp}: contents and
     * modes; not its processes), kept for a day. Needs the {@code sandbox.snapshot} operation;
     * counts against the client's snapshot quota.
     */
    public SnapshotInfo snapshot() {
        return transport.json("POST", path("snapshots"), Json.MAPPER.createObjectNode(), true, Json::snapshot);
    }

    /**
     * As {@link #snapshot()}, and with the sandbox's processes and their memory too (a gVisor
     * checkpoint): a sandbox forked from it has them running where they were. Only for a sandbox of a
     * profile with {@code isolation: gvisor} (otherwise a {@link BadRequestException} naming the
     * tier), and not while an execution is running (a {@link ConflictException}).
     */
    public SnapshotInfo snapshotWithMemory() {
        return transport.json("POST", path("snapshots"), RequestBodies.object("memory", true), true, Json::snapshot);
    }

    /** As {@link #snapshot()}, kept for {@code ttl} (1 s to 7 days). */
    public SnapshotInfo snapshot(Duration ttl) {
        Objects.requireNonNull(ttl, "ttl");
        return transport.json("POST", path("snapshots"), RequestBodies.object("ttlSeconds", RequestBodies.wholeSecondsUp(ttl)), true,
                Json::snapshot);
    }

    /**
     * Destroys the sandbox and kills every process in it. Idempotent; a sandbox that is already
     * gone (expired, deleted elsewhere) is not an error. Also destroys a sandbox this handle
     * merely attached to with {@link Airlock#get(String)}.
     */
    @Override
    public void close() {
        if (closed.get()) {
            return;
        }
        try {
            transport.noContent("DELETE", path(), null);
        } catch (NotFoundException alreadyGone) {
            // expired or deleted elsewhere: the goal is reached
        }
        closed.set(true);
    }

    /**
     * Makes a preview link to {@code port} of this sandbox (one of its profile's {@code ports}; the
     * server refuses others with {@link ForbiddenException}): a URL a browser can open with no
     * other credential, for an hour or until the sandbox ends (docs/rest-api.md, "Preview ports").
     */
    public PreviewLink previewLink(int port) {
        checkPort(port);
        return transport.json("POST", path("ports", Integer.toString(port), "link"), Json.MAPPER.createObjectNode(), false,
                n -> new PreviewLink(java.net.URI.create(transport.baseUrl() + n.get("url").asString()), port,
                        java.time.Instant.parse(n.get("expiresAt").asString())));
    }

    /**
     * Sends one HTTP request to the web server listening on {@code port} inside this sandbox,
     * through the Airlock server, with this client's token (which the server does not pass on),
     * and returns its answer whole: status, headers (without Set-Cookie) and body. The status is
     * the server inside's; an answer of the Airlock server itself (403 for a port the profile does
     * not name, 502 when nothing listens, 504, 429) comes back the same way, with a JSON error body.
     *
     * @param method such as {@code GET} or {@code POST}
     * @param path   the path and query inside, such as {@code /index.html?x=1} (percent-encoded as needed)
     * @param body   the request body, or null for none
     */
    public java.net.http.HttpResponse<byte[]> portRequest(int port, String method, String path, byte[] body) {
        checkPort(port);
        Objects.requireNonNull(method, "method");
        Objects.requireNonNull(path, "path");
        if (!path.startsWith("/")) {
            throw new IllegalArgumentException("a path inside the sandbox starts with '/', such as /index.html: not '" + path + "'");
        }
        java.net.http.HttpRequest request = transport.request(path("ports", Integer.toString(port)) + path, true)
                .method(method, body == null ? java.net.http.HttpRequest.BodyPublishers.noBody()
                        : java.net.http.HttpRequest.BodyPublishers.ofByteArray(body))
                .build();
        return transport.sendRaw(request);
    }

    private static void checkPort(int port) {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("a port is 1 to 65535, not " + port);
        }
    }

    private String path(String... rest) {
        String[] segments = new String[3 + rest.length];
        segments[0] = "v1";
        segments[1] = "sandboxes";
        segments[2] = id;
        System.arraycopy(rest, 0, segments, 3, rest.length);
        return Transport.path(segments);
    }

    @Override
    public String toString() {
        return "RemoteSandbox[" + id + "]";
    }
}
