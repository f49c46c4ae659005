package dev.airlock.server.command;

import dev.airlock.core.AirlockException;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.ImageInfo;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.egress.EgressRecord;
import dev.airlock.server.policy.Approval;
import dev.airlock.server.policy.Operation;
import org.eclipse.jetty.websocket.api.Session;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * Everything a client can ask of the server, as one closed set of records. Each door (REST, MCP
 * stdio and HTTP, and through REST the SDK and the CLI) parses its own wire format into these and
 * hands them to {@code SandboxService.execute}, where the same chain of controls decides every one
 * of them and one handler per concern carries it out; no door holds a rule of its own.
 *
 * @param <R> what the command returns when it is carried out
 */
public sealed interface Command<R> {

    /** The operation a policy must grant for a client to send this command: the table of docs/policy.md. */
    default Operation operation() {
        return switch (this) {
            case Create c -> Operation.SANDBOX_CREATE;
            case ListSandboxes l -> Operation.SANDBOX_READ;
            case Describe d -> Operation.SANDBOX_READ;
            case Egress e -> Operation.SANDBOX_READ;
            case ExtendTtl e -> Operation.SANDBOX_EXTEND;
            case Pause p -> Operation.SANDBOX_PAUSE;
            case TakeSnapshot t -> Operation.SANDBOX_SNAPSHOT;
            case ListSnapshots l -> Operation.SANDBOX_SNAPSHOT;
            case DescribeSnapshot d -> Operation.SANDBOX_SNAPSHOT;
            case DeleteSnapshot d -> Operation.SANDBOX_SNAPSHOT;
            case Fork f -> Operation.SANDBOX_CREATE;
            case ReadSnapshotArchive r -> Operation.SANDBOX_SNAPSHOT;
            case Resume r -> Operation.SANDBOX_PAUSE;
            case UpdateNetwork n -> Operation.NETWORK_UPDATE;
            case Destroy d -> Operation.SANDBOX_DESTROY;
            case Exec e -> Operation.EXEC;
            case StartProcess p -> Operation.EXEC;
            case Signal s -> Operation.EXEC;
            case Input i -> Operation.EXEC;
            case ProcessOutput p -> Operation.SANDBOX_READ;
            case Attach t -> Operation.EXEC;
            case OpenPort o -> Operation.EXEC;
            case Run r -> Operation.RUN;
            case WriteFile w -> Operation.FILES_WRITE;
            case ReadFile r -> Operation.FILES_READ;
            case Stat s -> Operation.FILES_READ;
            case ListFiles l -> Operation.FILES_READ;
            case Mkdir m -> Operation.FILES_WRITE;
            case Remove r -> Operation.FILES_WRITE;
            case Rename r -> Operation.FILES_WRITE;
            case ListOutputs l -> Operation.OUTPUTS;
            case DescribeOutputs d -> Operation.OUTPUTS;
            case ReadOutput r -> Operation.OUTPUTS;
            case DeleteOutputs d -> Operation.OUTPUTS;
            case ListApprovals l -> Operation.APPROVALS;
            case DescribeApproval d -> Operation.APPROVALS;
            case Decide d -> Operation.APPROVALS;
            case Metrics m -> Operation.METRICS;
            case MetricsHistory m -> Operation.METRICS;
            case ListNodes l -> Operation.CLUSTER_READ;
            case DrainNode d -> Operation.CLUSTER_DRAIN;
            case ReadAudit r -> Operation.AUDIT;
            case VerifyAudit v -> Operation.AUDIT;
            case ListImages l -> Operation.SANDBOX_READ;
            case CreateContext c -> Operation.EXEC;
            case ListContexts l -> Operation.SANDBOX_READ;
            case RestartContext r -> Operation.EXEC;
            case DeleteContext d -> Operation.EXEC;
            case RunCell r -> Operation.EXEC;
        };
    }

    /** The sandbox this command acts on, or null. */
    default String sandbox() {
        return null;
    }

    /**
     * Whether a caller granted {@code granted} may send this command. A command is covered by its
     * own operation; besides that:
     * <ul>
     *   <li>the one-shot {@link Run} covers the steps it takes on its own sandbox: create, mkdir,
     *       write, exec, stat, list, read, destroy;</li>
     *   <li>{@code files.write} covers {@link Stat} (a writer looks at what it wrote);</li>
     *   <li>{@code exec} covers {@link ListContexts} (who runs cells sees the contexts to run them in);</li>
     *   <li>any operation covers {@link Describe}: a door checks that what a request names exists
     *       before it judges the body, but only {@code sandbox.read} asks for it on its own.</li>
     * </ul>
     */
    default boolean coveredBy(Operation granted) {
        if (granted == operation() || this instanceof Describe) {
            return true;
        }
        return switch (granted) {
            case RUN -> this instanceof Create || this instanceof Mkdir || this instanceof WriteFile || this instanceof Exec
                    || this instanceof Stat || this instanceof ListFiles || this instanceof ReadFile || this instanceof Destroy;
            case FILES_WRITE -> this instanceof Stat;
            case EXEC -> this instanceof ListContexts;
            default -> false;
        };
    }

    /**
     * Whether a client granted {@code sandbox.any} may send this command to a sandbox another
     * client owns: what an operator needs to see what runs and to stop it (the list, a sandbox's
     * description with its processes and network policy, its egress records and interpreter
     * contexts, the names and sizes of its files) and to extend or destroy it. Never what reads
     * what the sandbox's programs hold or wrote (file contents, process output, snapshots), nor
     * what runs code in it or changes it (exec, signals, cells, writes, network, pause): those
     * stay its owner's. One list, judged where a command's sandbox is resolved.
     */
    default boolean reachesAnyOwner() {
        return this instanceof ListSandboxes || this instanceof Describe || this instanceof Egress || this instanceof ListContexts
                || this instanceof ListFiles || this instanceof Stat || this instanceof ExtendTtl || this instanceof Destroy;
    }

    // --- lifecycle ---

    /**
     * A new sandbox, as the client asked for it; the service fills it in and bounds it from the
     * profile.
     *
     * @param profile     null: the client's first
     * @param image       null: the profile's
     * @param limits      the client's changes, applied to the profile's default limits
     * @param network     null: the profile's network
     * @param ttl         null: the server's default, within the profile's maximum lifetime
     * @param idleTimeout null: the server's default
     * @param snapshot    null: an empty sandbox; else one of the caller's snapshots, whose files the new
     *                    sandbox starts with, and whose profile and image it gets
     */
    record Create(String profile, String image, UnaryOperator<Limits> limits, Map<String, String> env, NetworkPolicy network,
                  Map<String, String> labels, Duration ttl, Duration idleTimeout, Language defaultLanguage, String snapshot)
            implements Command<SandboxView> {

        /** A new, empty sandbox. */
        public Create(String profile, String image, UnaryOperator<Limits> limits, Map<String, String> env, NetworkPolicy network,
                      Map<String, String> labels, Duration ttl, Duration idleTimeout, Language defaultLanguage) {
            this(profile, image, limits, env, network, labels, ttl, idleTimeout, defaultLanguage, null);
        }

        /** This request, restoring {@code snapshotId}. */
        public Create from(String snapshotId) {
            return new Create(profile, image, limits, env, network, labels, ttl, idleTimeout, defaultLanguage, snapshotId);
        }

        /** This request with the profile and image of the snapshot it restores. */
        public Create restoring(String snapshotProfile, String snapshotImage) {
            return new Create(snapshotProfile, snapshotImage, limits, env, network, labels, ttl, idleTimeout, defaultLanguage, snapshot);
        }

        /** The most labels a sandbox carries. */
        public static final int MAX_LABELS = 64;

        public Create {
            limits = limits == null ? UnaryOperator.identity() : limits;
            env = env == null ? Map.of() : Map.copyOf(env);
            labels = labels == null ? Map.of() : Map.copyOf(labels);
            if (labels.size() > MAX_LABELS) {
                throw AirlockException.invalid("a sandbox takes at most " + MAX_LABELS + " labels, not " + labels.size());
            }
            for (String key : labels.keySet()) {
                if (key.isBlank() || key.indexOf('=') >= 0) {
                    // the list filter is key=value: such a key could never be matched
                    throw AirlockException.invalid("label key '" + Printable.of(key)
                            + "' must be non-blank and contain no '=' (labels are filtered as key=value)");
                }
            }
        }

    }

    /** The caller's sandboxes whose labels hold every pair of {@code labels}, oldest first. */
    record ListSandboxes(Map<String, String> labels) implements Command<List<SandboxView>> {
        public ListSandboxes {
            labels = labels == null ? Map.of() : Map.copyOf(labels);
        }
    }

    /** One sandbox, with its network policy and background processes. */
    record Describe(String sandbox) implements Command<SandboxView> {
    }

    /** The sandbox's recent egress records, oldest first: at most {@value #KEPT}. */
    record Egress(String sandbox) implements Command<List<EgressRecord>> {
        /** The most egress records kept per sandbox (in memory, not the audit log). */
        public static final int KEPT = 1000;
    }

    /** The sandbox lives until {@code ttl} from now, within its profile's maximum lifetime. */
    record ExtendTtl(String sandbox, Duration ttl) implements Command<SandboxView> {
    }

    /**
     * Freezes every process of the sandbox until {@link Resume}: it uses no CPU, and executions,
     * files and contexts are refused (409) meanwhile. Its time-to-live keeps running; its idle
     * timeout does not (a paused sandbox is not idle, it is kept). {@code toDisk}: its processes are
     * saved to the data directory and stopped instead, so it holds no memory (gVisor; seconds), and
     * {@link Resume} restores them.
     */
    record Pause(String sandbox, boolean toDisk) implements Command<SandboxView> {
        public Pause(String sandbox) {
            this(sandbox, false);
        }
    }

    /** Thaws a paused sandbox; its idle timeout starts again from now. */
    record Resume(String sandbox) implements Command<SandboxView> {
    }

    /**
     * Captures the files of the sandbox's /workspace and /tmp as a snapshot of the caller's, kept
     * for {@code ttl} (null: a day); restoring it is a {@link Create} naming it. With {@code memory}
     * (gVisor, microVM) its processes are saved too, with their memory, and a restore brings them back.
     */
    record TakeSnapshot(String sandbox, Duration ttl, boolean memory) implements Command<SnapshotView> {
        public TakeSnapshot(String sandbox, Duration ttl) {
            this(sandbox, ttl, false);
        }

        /** The longest a snapshot is kept. */
        public static final Duration MAX_TTL = Duration.ofDays(7);

        public TakeSnapshot {
            if (ttl != null && (ttl.compareTo(Duration.ofSeconds(1)) < 0 || ttl.compareTo(MAX_TTL) > 0)) {
                throw AirlockException.invalid("a snapshot's ttlSeconds must be 1 to " + MAX_TTL.toSeconds() + ", not " + ttl.toSeconds());
            }
        }
    }

    /** The caller's snapshots, oldest first. */
    record ListSnapshots() implements Command<List<SnapshotView>> {
    }

    record DescribeSnapshot(String snapshot) implements Command<SnapshotView> {
    }

    record DeleteSnapshot(String snapshot) implements Command<Void> {
    }

    /** Writes the snapshot's files to {@code sink} as a tar archive, once every file was checked against its digest. */
    record ReadSnapshotArchive(String snapshot, OutputStream sink) implements Command<Void> {
    }

    /**
     * {@code count} new sandboxes from one of the caller's snapshots, each created by {@code create}
     * (which names the snapshot) through every control, as one create is; all or none: if one is
     * refused, those already made are destroyed.
     */
    record Fork(Create create, int count) implements Command<List<SandboxView>> {
        /** The most sandboxes one fork makes. */
        public static final int MAX_COUNT = 16;

        public Fork {
            if (create == null || create.snapshot() == null) {
                throw new IllegalArgumentException("a fork creates from a snapshot");
            }
            if (count < 1 || count > MAX_COUNT) {
                throw AirlockException.invalid("a fork makes 1 to " + MAX_COUNT + " sandboxes, not " + count);
            }
        }
    }

    /**
     * A snapshot as its owner sees it: what it was taken of, its digest (the SHA-256 of its
     * manifest, checked before every restore), its size and lifetime, and what it left out.
     */
    record SnapshotView(String id, String owner, String sandbox, String profile, String image, String imageDigest, String digest, long bytes,
                        int files, List<String> leftOut, java.time.Instant createdAt, java.time.Instant expiresAt, boolean memory) {
    }

    /**
     * A snapshot as the node of a cluster that holds it hands it to another for a fork there: its
     * record ({@code snapshot.json}) and its manifest, byte for byte.
     */
    record HeldSnapshot(byte[] record, byte[] manifest) {
    }

    /** Replaces the sandbox's network policy; open connections the new one denies are closed. */
    record UpdateNetwork(String sandbox, NetworkPolicy network) implements Command<SandboxView> {
    }

    record Destroy(String sandbox) implements Command<Void> {
    }

    // --- executions ---

    /**
     * How an execution runs beside what it runs: environment, directory, input, timeout and terminal.
     *
     * @param timeout   null: the sandbox's
     * @param tty       null: on pipes; else on a pseudo-terminal of this size (a background process only)
     * @param openStdin whether a background process on pipes keeps its standard input open for
     *                  {@link Input} after {@code stdin} (one on a terminal always does)
     */
    record ExecOptions(Map<String, String> env, String cwd, byte[] stdin, Duration timeout, dev.airlock.core.TerminalSize tty,
                       boolean openStdin) {
        public static final ExecOptions NONE = new ExecOptions(null, null, null, null);

        public ExecOptions {
            env = env == null ? Map.of() : Map.copyOf(env);
        }

        /** Options without a terminal. */
        public ExecOptions(Map<String, String> env, String cwd, byte[] stdin, Duration timeout) {
            this(env, cwd, stdin, timeout, null);
        }

        /** Options whose standard input is closed once {@code stdin} is written (unless on a terminal). */
        public ExecOptions(Map<String, String> env, String cwd, byte[] stdin, Duration timeout, dev.airlock.core.TerminalSize tty) {
            this(env, cwd, stdin, timeout, tty, false);
        }
    }

    /**
     * How a door waits for an execution: it starts it with a listener of its own and returns the
     * result (REST streams NDJSON this way; {@link #listening} is the plain case).
     */
    @FunctionalInterface
    interface Waiter {
        ExecResult await(Function<OutputListener, Execution> start) throws IOException;

        /** Output to {@code listener} as it is produced; interrupting the thread cancels. */
        static Waiter listening(OutputListener listener) {
            return start -> start.apply(listener).await();
        }
    }

    /** Runs to the end; interrupting the calling thread cancels the execution. */
    record Exec(String sandbox, ExecSource source, ExecOptions options, Waiter waiter) implements Command<ExecResult> {
        public Exec {
            options = options == null ? ExecOptions.NONE : options;
            waiter = waiter == null ? Waiter.listening(OutputListener.NONE) : waiter;
        }

    }

    /** Starts a process that runs on without a request waiting for it; its output goes to files. */
    record StartProcess(String sandbox, ExecSource source, ExecOptions options) implements Command<ProcessView> {
        public StartProcess {
            options = options == null ? ExecOptions.NONE : options;
        }
    }

    /**
     * A background process, for a door to read its stdout or stderr: the sandbox owner's alone
     * (not {@link #reachesAnyOwner}), as a file's contents are; {@link Describe} lists processes
     * without their output.
     */
    record ProcessOutput(String sandbox, String process) implements Command<ProcessView> {
    }

    /**
     * Attaches a WebSocket to the terminal of a running background process started with a tty: the
     * answer is the socket's endpoint, for the door to upgrade the connection to (the process is
     * checked first: it has a terminal, it runs, it has room for one more socket).
     */
    record Attach(String sandbox, String process) implements Command<Session.Listener> {
    }

    /**
     * Reaches a preview port of a sandbox (docs/security-model.md, "Preview ports"): the answer is
     * the sandbox, once its profile was found to name {@code port}, for the door to open the TCP
     * connection through the agent and forward the client's HTTP request or WebSocket over it.
     * An {@code exec}: a client that runs code in the sandbox can already reach what listens there.
     * The owner's alone (not {@link #reachesAnyOwner}): what a server inside serves is the sandbox's
     * contents.
     */
    record OpenPort(String sandbox, int port) implements Command<SandboxView> {
    }

    /**
     * Input to a running background process from a door that holds no socket to it (E2B's envd):
     * bytes for its standard input or terminal, then its standard input closed if {@code close}, or
     * its terminal resized. Only a process started on a terminal or with {@link ExecOptions#openStdin}
     * takes input.
     *
     * @param data   the bytes to write, at most {@value #MAX_BYTES} (empty: none)
     * @param resize null, or its terminal's new size
     */
    record Input(String sandbox, String process, byte[] data, boolean close, dev.airlock.core.TerminalSize resize)
            implements Command<ProcessView> {
        /** The most bytes one input carries: a terminal's WebSocket takes messages of the same size. */
        public static final int MAX_BYTES = 64 * 1024;

        public Input {
            data = data == null ? new byte[0] : data;
            if (data.length > MAX_BYTES) {
                throw new AirlockException(AirlockException.Kind.TOO_LARGE, "an input of " + data.length + " bytes is over the limit of "
                        + MAX_BYTES + ": send it in parts, or write it to a file");
            }
        }
    }

    /** Sends {@code signal} to a background process's whole process group (SIGKILL: to everything it started). */
    record Signal(String sandbox, String process, int signal) implements Command<ProcessView> {
    }

    /**
     * A one-shot run: a fresh sandbox with the client's first profile, {@code files} placed under
     * /workspace, the code run, what it left in /workspace/output collected, the sandbox destroyed.
     *
     * @param files   path (absolute, or relative to /workspace) to content
     * @param timeout null: the profile's
     */
    record Run(Language language, String code, byte[] stdin, Map<String, byte[]> files, Duration timeout, Map<String, String> labels,
               OutputListener listener) implements Command<RunResult> {

        /** The most files a run places. */
        public static final int MAX_FILES = 64;

        public Run {
            if (language == null || code == null) {
                throw AirlockException.invalid("a run needs a 'language' (" + Language.names() + ") and its 'code'");
            }
            files = files == null ? Map.of() : Map.copyOf(files);
            if (files.size() > MAX_FILES) {
                throw AirlockException.invalid("'files' holds " + files.size() + " files, at most " + MAX_FILES + " are allowed");
            }
            labels = labels == null ? Map.of() : Map.copyOf(labels);
            listener = listener == null ? OutputListener.NONE : listener;
        }
    }

    /**
     * What a one-shot run gave back.
     *
     * @param outputs the files it left in /workspace/output, in path order (empty when cancelled)
     */
    record RunResult(ExecResult result, List<RunOutput> outputs) {
    }

    /**
     * One file a run left behind.
     *
     * @param content    its bytes, or null when not returned
     * @param notReturned why its content did not come back, or null
     */
    record RunOutput(String path, long size, byte[] content, String notReturned) {
    }

    // --- interpreter contexts: long-lived kernels whose state persists between cells ---

    /** Starts a new interpreter context in the sandbox; answers once its kernel is ready. */
    record CreateContext(String sandbox, Language language) implements Command<InterpreterContextView> {
        public CreateContext {
            language = language == null ? Language.PYTHON : language;
            if (language != Language.PYTHON) {
                throw AirlockException.invalid("interpreter contexts run python only, not " + language.id());
            }
        }
    }

    /** The sandbox's interpreter contexts, oldest first. */
    record ListContexts(String sandbox) implements Command<List<InterpreterContextView>> {
    }

    /** Stops the context's kernel (and all its state) and starts a fresh one under the same id. */
    record RestartContext(String sandbox, String context) implements Command<InterpreterContextView> {
    }

    record DeleteContext(String sandbox, String context) implements Command<Void> {
    }

    /**
     * Runs {@code code} as one cell in the context; interrupting the calling thread interrupts the
     * cell (a KeyboardInterrupt in the kernel), and the context lives on.
     *
     * @param context null: the sandbox's first context, created if it has none
     * @param timeout null: the sandbox's execution timeout
     */
    record RunCell(String sandbox, String context, String code, Duration timeout, CellResult.Listener listener) implements Command<CellResult> {
        /** The largest cell a request may send. */
        public static final int MAX_CODE_BYTES = 1000 * 1000;

        public RunCell {
            if (context != null && context.isBlank()) {
                throw AirlockException.invalid("a blank context names none: give a context's id, or none for the sandbox's first");
            }
            if (code == null) {
                throw AirlockException.invalid("a cell needs its 'code'");
            }
            if (code.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_CODE_BYTES) {
                throw AirlockException.invalid("code is larger than " + MAX_CODE_BYTES + " bytes: place large parts as files and read them");
            }
            listener = listener == null ? CellResult.Listener.NONE : listener;
        }
    }

    /**
     * An interpreter context as clients see it.
     *
     * @param state {@code ready}, {@code busy} (running a cell) or {@code dead} (its kernel died: restart it)
     */
    record InterpreterContextView(String id, String language, String state, java.time.Instant createdAt, int cells, String message) {
    }

    // --- files: every path is resolved by the agent, inside the sandbox ---

    record WriteFile(String sandbox, String path, InputStream content) implements Command<FileInfo> {
    }

    /** Copies the file to {@code sink}, within the sandbox's file size limit. */
    record ReadFile(String sandbox, String path, OutputStream sink) implements Command<Void> {
    }

    record Stat(String sandbox, String path) implements Command<FileInfo> {

    }

    record ListFiles(String sandbox, String path) implements Command<List<FileInfo>> {
    }

    record Mkdir(String sandbox, String path, boolean parents) implements Command<FileInfo> {
    }

    record Remove(String sandbox, String path, boolean recursive) implements Command<Void> {
    }

    record Rename(String sandbox, String from, String to) implements Command<FileInfo> {
    }

    // --- outputs: what ended sandboxes left in /workspace/output ---

    /** The caller's collected outputs, newest first. */
    record ListOutputs() implements Command<List<JsonNode>> {
    }

    record DescribeOutputs(String outputsOf) implements Command<JsonNode> {
    }

    record ReadOutput(String outputsOf, String path, OutputStream sink) implements Command<Void> {
    }

    record DeleteOutputs(String outputsOf) implements Command<Void> {
    }

    // --- approvals: an operator's commands ---

    /** The approvals waiting for a person, oldest first. */
    record ListApprovals() implements Command<List<Approval>> {
    }

    record DescribeApproval(String approval) implements Command<Approval> {
    }

    /** Approves or denies a pending approval; {@code by} is recorded as who decided. */
    record Decide(String approval, boolean approve, String by, String reason) implements Command<Approval> {
    }

    /** The images sandboxes may start from, beside 'system' (what the server's driver holds). */
    record ListImages() implements Command<List<ImageInfo>> {
    }

    /**
     * Audit records, oldest first, at most {@code limit} of the newest that match; null filters
     * match all. {@code client} matches records filed under that client (any door). The field is
     * {@code ofSandbox}, not {@code sandbox}: reading a destroyed sandbox's records names no sandbox to resolve.
     */
    record ReadAudit(String ofSandbox, String client, String kind, java.time.Instant since, java.time.Instant until, int limit,
                     Long before, String text) implements Command<List<dev.airlock.server.audit.AuditRecord>> {
        public static final int DEFAULT_LIMIT = 500;
        public static final int MAX_LIMIT = 10_000;
        /** The longest text a search may look for. */
        public static final int MAX_TEXT = 200;
    }

    /** Checks the audit log's hash chain. */
    record VerifyAudit() implements Command<dev.airlock.server.audit.AuditReader.Verdict> {
    }

    /** The server's metrics in the Prometheus text format. */
    record Metrics() implements Command<String> {
    }

    /** The last hour of some of those metrics, sampled every ten seconds, for the console's charts. */
    record MetricsHistory() implements Command<MetricsSeries> {
    }

    // --- the cluster (docs/cluster.md) ---

    /** The nodes of the cluster this server is one of; a conflict on a server that runs alone. */
    record ListNodes() implements Command<List<NodeView>> {
    }

    /** Stops ({@code draining}) or resumes placements on one node; its sandboxes run on. */
    record DrainNode(String node, boolean draining) implements Command<NodeView> {
    }

    /**
     * A node as the cluster's database knows it: {@code state} is {@code starting} (joined, its API
     * not yet serving), {@code up}, {@code draining}, {@code down} (silent past its lease) or {@code
     * left} (stopped).
     *
     * @param self whether it is the node that answers
     */
    record NodeView(String name, String apiAddress, List<String> tiers, int capacity, int sandboxes, String state, boolean draining,
                    java.time.Instant startedAt, java.time.Instant heartbeatAt, Duration silentFor, boolean self) {
    }

    /** A path as the sandbox's programs see it: relative paths are under /workspace, where programs start. */
    static String inWorkspace(String path) {
        return path.startsWith("/") ? path : "/workspace/" + path;
    }
}
