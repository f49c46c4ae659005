package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxId;
import tools.jackson.databind.node.ObjectNode;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One OCI runtime binary (runc, crun or runsc, or Airlock's own, {@link Launcher}) and the few commands Airlock gives it. Containers
 * live in the runtime's default state root, so an operator's own {@code runc list} shows them.
 *
 * <p>Everything that differs for gVisor's runsc is decided here, in one place ({@link #isGvisor}
 * and the methods that ask it): the flags it runs with, and which parts of the bundle it cannot
 * take the way runc does. The rest of the driver builds one bundle for all three.
 */
final class OciRuntime {

    private static final Pattern LIST_ID = Pattern.compile("\"id\"\\s*:\\s*\"([^\"]+)\"");
    private static final long COMMAND_TIMEOUT_SECONDS = 60;

    private final String name;
    private final Path binary;
    /** Airlock's own runtime ({@value Launcher#NAME}); null for runc, crun and runsc. */
    private final Launcher launcher;

    private OciRuntime(String name, Path binary, Launcher launcher) {
        this.name = name;
        this.binary = binary;
        this.launcher = launcher;
    }

    /**
     * The flags runsc runs every command with (they go before the command; {@code list} and {@code
     * delete} get them too, so all see the same state root).
     * <ul>
     *   <li>{@code --network=none}: the Sentry's own network stack gets only a loopback device, and
     *       the sandbox is never given the host's interfaces. The default ({@code sandbox}) would copy
     *       whatever the network namespace holds, and refuses to start in the root one. The egress
     *       bridge needs nothing more: the agent listens on the Sentry's 127.0.0.1 and reaches the
     *       proxy through the unix socket in /run/airlock.</li>
     *   <li>{@code --host-uds=open}: code inside may connect to a unix socket that already exists on
     *       a mounted host path (none by default) — here the agent's and the egress proxy's sockets in
     *       /run/airlock, both owned by the sandbox's host uid, mode 0600, and the agent's deleted at
     *       once. It may not create (bind) host sockets.</li>
     *   <li>{@code --oci-seccomp}: the bundle's seccomp allow-list is applied by the Sentry to the
     *       sandbox's processes as well; without it runsc ignores the profile (its own filter guards
     *       the Sentry's calls into the host kernel, not the calls the sandbox may make to the Sentry).</li>
     * </ul>
     */
    static final List<String> RUNSC_FLAGS = List.of("--network=none", "--host-uds=open", "--oci-seccomp");

    /**
     * Finds the runtime {@code name} (runc, crun or runsc) on the PATH, or at {@code name} itself when
     * it is an absolute path to one of them (a runtime installed elsewhere); or explains how to install
     * it. {@value Launcher#NAME} is Airlock's own ({@link Launcher}), which needs nothing installed.
     */
    static OciRuntime find(String name) {
        if (Launcher.NAME.equals(name)) {
            Launcher launcher = Launcher.install();
            return new OciRuntime(Launcher.NAME, launcher.binary(), launcher);
        }
        String baseName = name == null ? "" : Path.of(name).getFileName() == null ? name : Path.of(name).getFileName().toString();
        if (!List.of("runc", "crun", "runsc").contains(baseName) || !(name.equals(baseName) || name.startsWith("/"))) {
            throw AirlockException.invalid("unknown OCI runtime '" + name + "': choose runc, crun or runsc (or an absolute path to"
                    + " one), or airlock, Airlock's own");
        }
        Path found = name.startsWith("/") ? (Files.isRegularFile(Path.of(name)) && Files.isExecutable(Path.of(name)) ? Path.of(name) : null)
                : locate(name);
        if (found == null) {
            throw AirlockException.unavailable("OCI runtime '" + name + "' is not installed: install it (apt-get install " + baseName
                    + (baseName.equals("runsc") ? ", or gVisor's own release" : "") + ") or choose another runtime");
        }
        return new OciRuntime(baseName, found, null);
    }

    /** Where runtime {@code name} is: Airlock's own is always there (placed in {@link Launcher#STATE} when it is used). */
    static Path locate(String name) {
        if (Launcher.NAME.equals(name)) {
            return Launcher.STATE;
        }
        String path = System.getenv().getOrDefault("PATH", "") + ":/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/bin:/usr/local/sbin";
        for (String dir : path.split(File.pathSeparator)) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    String name() {
        return name;
    }

    Path binary() {
        return binary;
    }

    /** Whether this is gVisor's runsc: the sandbox's kernel is the Sentry, a user-space kernel. */
    boolean isGvisor() {
        return name.equals("runsc");
    }

    /** The bundle's configuration ({@link OciConfig#config}) as this runtime takes it: {@link OciConfig#forGvisor} for runsc. */
    ObjectNode adapt(ObjectNode config) {
        return isGvisor() ? OciConfig.forGvisor(config) : config;
    }

    /**
     * Writes {@code config} into {@code bundle} as its {@code config.json}, which runc, crun and runsc
     * read. Airlock's own runtime takes it in memory instead ({@link #runDetached}) and writes its
     * launcher's spec there ({@link Launcher#run}): writing the JSON and parsing it back in the same
     * process cost a one-shot's cold JVM about 6 ms.
     */
    void writeBundle(Path bundle, ObjectNode config) throws IOException {
        if (launcher == null) {
            Files.write(bundle.resolve("config.json"), OciConfig.json(config));
        }
    }

    /**
     * Whether the runtime joins a user namespace made for it first ({@link SandboxUserNamespace}),
     * made as the sandbox's own host uid: runc and crun do. runsc cannot: its gofer fails to setns
     * into it (EINVAL: a multi-threaded Go process may not join a user namespace), so under runsc the
     * runtime creates the sandbox's user namespace from the bundle's id mappings, as host root.
     * Airlock's own runtime makes it from those mappings itself, as the sandbox's host uid, without a
     * process of the host's for it.
     */
    boolean joinsUserNamespace() {
        return !isGvisor() && launcher == null;
    }

    /**
     * Whether {@link ProcViews} apply: runc lets files be bind-mounted over those /proc entries. Under
     * runsc /proc is the Sentry's own and describes the sandbox, not the host, so none is needed.
     */
    boolean needsProcViews() {
        return !isGvisor();
    }

    /**
     * Whether each execution can get a host cgroup of its own ({@link ExecCgroups}). Not under runsc:
     * the sandbox's processes are tasks of the Sentry, not host processes, so there is no host pid
     * to move. A SIGKILL to an execution is then the agent's alone, which kills everything below the
     * execution's supervisor (see docs/agent-protocol.md), a process that left its process group too.
     */
    boolean supportsExecCgroups() {
        return !isGvisor();
    }

    /**
     * Creates a sandbox's own host directory (bundle, {@code run/}, inputs). Under runc the sandbox's
     * host uid must traverse it to reach {@code run/}, so it is {@code rwx--x--x}; under runsc only
     * host root (the gofer) opens host files for the sandbox, so it is {@code rwx------} and no host
     * user gets to the sockets in it.
     */
    void createSandboxDirectory(Path dir) throws IOException {
        StateDirectory.createTraversable(dir);
        if (isGvisor()) {
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        }
    }

    /**
     * Lets the sandbox's user connect to a unix socket in its {@code run/} directory, and no other
     * sandbox. Under runc: owned by the sandbox's host uid, mode 0600. Under runsc the Sentry checks
     * the socket's host owner and mode against the sandbox's own uid 1000 (there is no id mapping: the
     * sandbox's users are the Sentry's), so the socket is host root's, mode 0666; host users are kept
     * out by the sandbox directory ({@link #createSandboxDirectory}), other sandboxes by their mount
     * namespace (they see only their own {@code run/}).
     */
    void grantSocket(Path socket, int sandboxHostUid) throws IOException {
        if (isGvisor()) {
            Files.setAttribute(socket, "unix:uid", 0);
            Files.setAttribute(socket, "unix:gid", 0);
            Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-rw-rw-"));
            return;
        }
        Files.setAttribute(socket, "unix:uid", sandboxHostUid);
        Files.setAttribute(socket, "unix:gid", sandboxHostUid);
        Files.setPosixFilePermissions(socket, PosixFilePermissions.fromString("rw-------"));
    }

    /**
     * Creates and starts the container in the background ({@code run --detach}) from {@code bundle},
     * whose configuration is {@code config} ({@link #writeBundle} has written it there for runc). The
     * runtime's own messages go to {@code log}; they are read back only if it fails.
     *
     * @return the host pid of the container's first process (the agent)
     */
    long runDetached(SandboxId id, Path bundle, ObjectNode config, Path log) {
        return startDetached(id, bundle, config, log, null);
    }

    /**
     * Starts the container in the background from what {@link #checkpoint} saved in {@code image}
     * ({@code restore --detach}; runsc only): its processes go on where they were.
     * {@code bundle}'s configuration must mount the same places as the checkpointed one's did.
     *
     * @return the host pid of the container's first process
     */
    long restoreDetached(SandboxId id, Path bundle, Path image, Path log) {
        return startDetached(id, bundle, null, log, image);
    }

    /**
     * Saves every process of the container with its memory into {@code image} ({@code checkpoint
     * --image-path}; runsc only). The container is stopped afterwards: this release's {@code
     * --leave-running} does not return (measured), so the caller restores it ({@link #restoreDetached}).
     * A connected host socket inside makes this fail, and the container is then gone too.
     */
    void checkpoint(String id, Path image) {
        if (!isGvisor()) {
            throw AirlockException.unavailable(name + " cannot checkpoint a sandbox's processes: only runsc can");
        }
        Result r = exec(null, "checkpoint", "--image-path", image.toString(), id);
        if (r.exitCode != 0) {
            // runsc prints a whole Go stack on an encoding error: its first line says what failed
            String first = r.output.strip().lines().findFirst().orElse("exit " + r.exitCode);
            throw AirlockException.unavailable(name + " checkpoint of " + id + " failed: " + Printable.of(first, 500));
        }
    }

    /**
     * What a host that cannot make a bind recursively read-only is told: host directories enter a
     * sandbox only that way (OciConfig.Mount#bindReadOnly), never with a writable submount.
     */
    static final String RECURSIVE_READ_ONLY_NEEDED = ": host directories enter a sandbox recursively read-only, which needs"
            + " runc 1.1 or newer (the rro, rnosuid and rnodev mount options) on Linux 5.12 or newer (mount_setattr); upgrade"
            + " them, or use --runtime runsc";

    private static boolean mentionsRecursiveReadOnly(String runtimeError) {
        return runtimeError.contains("mount_setattr") || runtimeError.contains("MOUNT_ATTR") || runtimeError.contains("recursive")
                || runtimeError.contains("\"rro\"");
    }

    private long startDetached(SandboxId id, Path bundle, ObjectNode config, Path log, Path image) {
        if (launcher != null) {
            return launcher.run(id, bundle, config, log);
        }
        Path pidFile = bundle.resolve("init.pid");
        Result r = image == null
                ? exec(log, "run", "--detach", "--pid-file", pidFile.toString(), "--bundle", bundle.toString(), id.value())
                : exec(log, "restore", "--detach", "--image-path", image.toString(), "--pid-file", pidFile.toString(),
                        "--bundle", bundle.toString(), id.value());
        if (r.exitCode != 0) {
            String error = lastError(log);
            throw new AirlockException(AirlockException.Kind.UNAVAILABLE, name + " could not start sandbox " + id + ": " + error
                    + (mentionsRecursiveReadOnly(error) ? RECURSIVE_READ_ONLY_NEEDED : "")
                    + " (run 'airlock doctor' to see what this host supports)");
        }
        try {
            return Long.parseLong(Files.readString(pidFile, StandardCharsets.US_ASCII).trim());
        } catch (IOException | NumberFormatException e) {
            throw AirlockException.unavailable(name + " started sandbox " + id + " but wrote no pid of its first process: " + e.getMessage());
        }
    }

    /** Ends what this runtime keeps running for this process's starts: Airlock's own, its {@link LaunchServer}. */
    void close() {
        if (launcher != null) {
            launcher.close();
        }
    }

    /**
     * Force-deletes a container: kills what is left in it and removes its state and cgroup. runsc
     * leaves the container's (empty) cgroups behind when the container never started or its
     * Sentry died (a memory limit reached), so under runsc they are removed here too.
     */
    boolean delete(String id) {
        if (launcher != null) {
            return launcher.delete(id);
        }
        boolean deleted = exec(null, "delete", "--force", id).exitCode == 0;
        if (isGvisor()) {
            removeCgroupsOf(id);
        }
        return deleted;
    }

    /**
     * Freezes ({@code pause}) or thaws ({@code resume}) every process of a container: runc through
     * its freezer cgroup, runsc by stopping the Sentry's tasks.
     */
    void freeze(String id, boolean freeze) {
        if (launcher != null) {
            LaunchCgroups.freeze(id, freeze);
            return;
        }
        String verb = freeze ? "pause" : "resume";
        Result r = exec(null, verb, id);
        if (r.exitCode != 0) {
            throw AirlockException.internal(name + " " + verb + " " + id + " failed: "
                    + Printable.of(r.output.strip().isEmpty() ? "exit " + r.exitCode : r.output.strip(), 500), null);
        }
    }

    /** How long the Sentry's and gofer's host processes get to leave their cgroups after runsc delete returned. */
    private static final long GVISOR_CGROUP_SETTLE_MILLIS = 5_000;

    /** Removes the container's cgroups once they are empty: runsc delete returns before its processes are all gone. */
    private static void removeCgroupsOf(String id) {
        long deadline = System.currentTimeMillis() + GVISOR_CGROUP_SETTLE_MILLIS;
        boolean interrupted = Thread.interrupted();
        try {
            while (true) {
                List<Path> left = Cgroups.of(id).stream().filter(c -> !Cgroups.remove(c) || Files.isDirectory(c)).toList();
                if (left.isEmpty() || System.currentTimeMillis() >= deadline) {
                    return;
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Ids of the containers the runtime knows about. */
    List<String> list() {
        if (launcher != null) {
            return Launcher.list();
        }
        // 'runc list' fails outright when a container is deleted while it lists (stat: no such file):
        // with other sandboxes coming and going that is common, so try again before giving up.
        Result r = exec(null, "list", "--format", "json");
        for (int attempt = 1; attempt < 10 && r.exitCode != 0; attempt++) {
            try {
                Thread.sleep(20L * attempt);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            r = exec(null, "list", "--format", "json");
        }
        List<String> ids = new ArrayList<>();
        if (r.exitCode == 0) {
            Matcher m = LIST_ID.matcher(r.output);
            while (m.find()) {
                ids.add(m.group(1));
            }
        }
        return ids;
    }

    String version() {
        if (launcher != null) {
            return launcher.version();
        }
        Result r = exec(null, "--version");
        return r.exitCode == 0 ? r.output.lines().findFirst().orElse("").trim() : "unknown";
    }

    /** The command line of one runtime command: the binary, the runtime's own flags ({@link #RUNSC_FLAGS}), then {@code args}. */
    List<String> command(String... args) {
        List<String> command = new ArrayList<>();
        command.add(binary.toString());
        if (isGvisor()) {
            command.addAll(RUNSC_FLAGS);
        }
        command.addAll(List.of(args));
        return command;
    }

    /** One runtime command's end: its exit status and what it printed (on stdout, and on stderr unless logged). */
    record Result(int exitCode, String output) {
    }

    private Result exec(Path log, String... args) {
        // A detached container inherits the runtime's stdio: a file, so nothing waits on a pipe it holds.
        return run(command(args), log, false);
    }

    /**
     * Runs {@code command} to its end, at most {@value #COMMAND_TIMEOUT_SECONDS} s, even when the
     * caller is being cancelled: a half-done create or delete would leave a sandbox behind.
     *
     * @param log        null: stdout and stderr are read together; else where stderr goes (appended),
     *                   and stdout too unless {@code readStdout} (then the log is started afresh)
     * @param readStdout whether stdout is read into the result when there is a log
     */
    static Result run(List<String> command, Path log, boolean readStdout) {
        ProcessBuilder pb = new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        if (log == null) {
            pb.redirectErrorStream(true);
        } else if (readStdout) {
            pb.redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
        } else {
            pb.redirectErrorStream(true).redirectOutput(log.toFile());
        }
        String what = Path.of(command.getFirst()).getFileName() + (command.size() > 1 ? " " + command.get(1) : "");
        boolean interrupted = Thread.interrupted();
        try {
            Process p = pb.start();
            String out = log == null || readStdout ? new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8) : "";
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(COMMAND_TIMEOUT_SECONDS);
            while (true) {
                try {
                    if (p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                        break;
                    }
                    p.destroyForcibly();
                    throw AirlockException.internal(what + " did not finish within " + COMMAND_TIMEOUT_SECONDS + "s", null);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            return new Result(p.exitValue(), out);
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot run " + command.getFirst() + ": " + e.getMessage());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The log's last line that says something: a runtime's reason for failing. */
    static String lastError(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            for (int i = lines.size() - 1; i >= 0; i--) {
                String line = lines.get(i).strip();
                if (!line.isEmpty()) {
                    return Printable.of(line, 500); // the runtime repeats what the bundle and the sandbox named
                }
            }
            return "no message";
        } catch (IOException e) {
            return "no message (" + e.getMessage() + ")";
        }
    }
}
