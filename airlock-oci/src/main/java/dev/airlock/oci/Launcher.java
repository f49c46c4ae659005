package dev.airlock.oci;

import dev.airlock.agent.AgentBinary;
import dev.airlock.agent.SeccompFilter;
import dev.airlock.core.AirlockException;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxId;
import dev.airlock.core.Trace;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Airlock's own runtime for the container tier ({@code --runtime airlock}): the static program
 * {@code airlock-launch} (src/main/c/launch.c of airlock-agent) starts the agent from the same
 * bundle runc is given, in one process forked by one {@code airlock-launch serve} that this
 * process keeps for its starts ({@link LaunchServer}), with no runtime daemon of the host's, no
 * second binary and no state of a runtime's own beyond one record per sandbox.
 *
 * <p>What runc does from the bundle is split: the host makes the sandbox's cgroups and writes their
 * limits ({@link LaunchCgroups}), compiles the bundle's seccomp profile to a BPF program ({@link
 * SeccompFilter}), and turns the bundle's configuration (taken in memory: no {@code config.json} is
 * written) into the launcher's plain spec ({@link #spec}); the launcher makes the sandbox's user
 * namespace as the sandbox's host uid, joins it and new ones, places PID 1 in the cgroups, mounts,
 * pivots, drops privileges, installs the filter and executes the agent. Deleting, freezing and listing need no program: the sandbox's PID 1 is killed (which ends
 * its whole pid namespace), its cgroups frozen or removed, its record read.
 *
 * <p>Records: /run/airlock-launch/sandboxes/ID holds "PID START" (the host pid of the sandbox's PID 1
 * and its start time in epoch milliseconds, so a reused pid is never signalled).
 */
final class Launcher {

    static final String NAME = "airlock";
    static final Path STATE = Path.of("/run/airlock-launch");
    private static final Path RECORDS = STATE.resolve("sandboxes");
    /** How long a delete waits for the sandbox's processes to be gone from its cgroups. */
    private static final long DELETE_WAIT_MILLIS = 10_000;

    // mount(2) flags
    private static final long MS_RDONLY = 1, MS_NOSUID = 2, MS_NODEV = 4, MS_NOEXEC = 8, MS_NOATIME = 1024, MS_BIND = 4096,
            MS_REC = 16384, MS_RELATIME = 1 << 21, MS_STRICTATIME = 1 << 24;
    // mount_setattr(2) attributes, set recursively
    private static final long ATTR_RDONLY = 1, ATTR_NOSUID = 2, ATTR_NODEV = 4, ATTR_NOEXEC = 8;
    private static final Map<String, Integer> RLIMITS = Map.of("RLIMIT_FSIZE", 1, "RLIMIT_CORE", 4, "RLIMIT_NPROC", 6, "RLIMIT_NOFILE", 7);
    /** The devices runc gives every container, bound from the host's nodes (nothing else of /dev exists inside). */
    private static final List<String> DEVICES = List.of("null", "zero", "full", "random", "urandom", "tty");

    private final Path binary;
    private final LaunchServer server;

    private Launcher(Path binary) {
        this.binary = binary;
        this.server = new LaunchServer(binary);
    }

    /** The launcher this process placed, while its binary is there. */
    private static volatile Launcher installed;

    /**
     * Places the launcher on this host ({@code /run/airlock-launch}, host root's alone): once per
     * process (this version's binary replaces an older one), again only if it was removed since.
     */
    static synchronized Launcher install() {
        Launcher done = installed;
        if (done != null && Files.isExecutable(done.binary)) {
            return done;
        }
        try {
            Files.createDirectories(RECORDS);
            Files.setPosixFilePermissions(STATE, PosixFilePermissions.fromString("rwx------"));
            installed = new Launcher(AgentBinary.installLauncherTo(STATE));
            return installed;
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot place Airlock's runtime (airlock-launch) in " + STATE + ": " + e.getMessage());
        }
    }

    /** Lets the launch server end ({@link LaunchServer#close}); the next start starts another. */
    void close() {
        server.close();
    }

    Path binary() {
        return binary;
    }

    String version() {
        return OciRuntime.run(List.of(binary.toString(), "--version"), null, false).output().strip();
    }

    /**
     * Starts the sandbox of {@code config} (as {@link OciConfig#config} made it, with a user
     * namespace to join), writing the launcher's spec into {@code bundle}, and returns the host pid of
     * its PID 1, the agent.
     */
    long run(SandboxId id, Path bundle, JsonNode config, Path log) {
        List<Path> cgroups = LaunchCgroups.make(id.value(), config.path("linux").path("resources"));
        Trace.mark("launch: cgroups made");
        try {
            Path filter = config.path("linux").get("seccomp") instanceof JsonNode profile && !profile.isNull() ? compiled(profile) : null;
            Trace.mark("launch: seccomp compiled");
            Path spec = bundle.resolve("launch.spec");
            Files.writeString(spec, spec(config, cgroups, filter, log), StandardCharsets.UTF_8);
            Trace.mark("launch: spec written");
            long pid = server.start(id.value(), spec, log);
            Trace.mark("launch: launcher returned");
            Files.writeString(RECORDS.resolve(id.value()), pid + " " + started(pid) + "\n");
            return pid;
        } catch (IOException | RuntimeException e) {
            LaunchCgroups.remove(id.value());
            if (e instanceof AirlockException ae) {
                throw ae;
            }
            throw AirlockException.unavailable("airlock-launch could not start sandbox " + id + ": " + e.getMessage());
        }
    }

    /**
     * The program of {@code profile}, compiled once per host: kept in {@code /run/airlock-launch} under the
     * profile's SHA-256 (compiling costs a cold process such as a one-shot {@code airlock run} about
     * 130 ms here). Only host root can write there, and a file is written aside and renamed into place.
     */
    static Path compiled(JsonNode profile) throws IOException {
        Compiled last = lastCompiled;
        if (last != null && last.profile.equals(profile) && Files.exists(last.program)) {
            return last.program;
        }
        byte[] text = profile.toString().getBytes(StandardCharsets.UTF_8);
        String name;
        try {
            name = "seccomp-" + java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(text)) + ".bpf";
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
        Path program = STATE.resolve(name);
        if (!Files.exists(program)) {
            Path aside = Files.createTempFile(STATE, "seccomp", ".tmp");
            try {
                Files.write(aside, SeccompFilter.compile(profile));
                Files.move(aside, program, java.nio.file.StandardCopyOption.ATOMIC_MOVE, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            } finally {
                Files.deleteIfExists(aside);
            }
        }
        // a copy: the caller's tree is its own to change
        lastCompiled = new Compiled(profile.deepCopy(), program);
        return program;
    }

    /**
     * The profile compiled last and its program. Every sandbox of a driver has the same profile, so
     * a start compares it with this one instead of serializing and hashing it again.
     */
    private record Compiled(JsonNode profile, Path program) {
    }

    private static volatile Compiled lastCompiled;

    /**
     * The launcher's spec for {@code config}: every control of the bundle as a line the launcher
     * carries out, in runc's order (mounts, devices and links, pivot, then read-only paths before
     * masked ones). What the launcher always does whatever the bundle says (a read-only root, no
     * capability, no_new_privs) is checked here against the bundle, so the two never disagree.
     */
    static String spec(JsonNode config, List<Path> cgroups, Path filter, Path log) {
        JsonNode process = config.path("process");
        JsonNode linux = config.path("linux");
        require(config.path("root").path("readonly").asBoolean(false), "a read-only root");
        require(process.path("noNewPrivileges").asBoolean(false), "noNewPrivileges");
        process.path("capabilities").properties().forEach(set -> require(set.getValue().isEmpty(), "no capability in " + set.getKey()));
        List<String> namespaces = new ArrayList<>();
        for (JsonNode ns : linux.path("namespaces")) {
            namespaces.add(ns.path("type").asString());
            require(!ns.has("path"), "no namespace to join (the launcher makes each one, its user namespace too), not " + ns);
        }
        require(namespaces.containsAll(List.of("pid", "ipc", "uts", "mount", "user", "cgroup")), "pid, ipc, uts, mount, user and cgroup namespaces");
        JsonNode uids = linux.path("uidMappings");
        require(uids.size() == 1 && uids.get(0).path("containerID").asLong(-1) == 0 && linux.path("gidMappings").equals(uids),
                "one id mapping from sandbox id 0, the same for users and groups");
        boolean newNetwork = namespaces.contains("network");
        StringBuilder s = new StringBuilder();
        line(s, "log", log.toString());
        line(s, "idmap", Long.toString(uids.get(0).path("hostID").asLong()), Long.toString(uids.get(0).path("size").asLong()));
        // a bundle weakened for 'airlock verify --unsafe' keeps the host's network namespace
        line(s, "network", newNetwork ? "new" : "host");
        cgroups.forEach(c -> line(s, "cgroup", c.toString()));
        line(s, "rootfs", config.path("root").path("path").asString());
        line(s, "hostname", config.path("hostname").asString("sandbox"));
        if (filter != null) {
            line(s, "seccomp", filter.toString());
        }
        for (JsonNode m : config.path("mounts")) {
            long flags = 0;
            long attrs = 0;
            List<String> data = new ArrayList<>();
            String type = m.path("type").asString();
            for (JsonNode o : m.path("options")) {
                switch (o.asString()) {
                    case "ro" -> flags |= MS_RDONLY;
                    case "rw" -> { }
                    case "nosuid" -> flags |= MS_NOSUID;
                    case "nodev" -> flags |= MS_NODEV;
                    case "noexec" -> flags |= MS_NOEXEC;
                    case "noatime" -> flags |= MS_NOATIME;
                    case "relatime" -> flags |= MS_RELATIME;
                    case "strictatime" -> flags |= MS_STRICTATIME;
                    case "bind" -> {
                        flags |= MS_BIND;
                        type = "bind";
                    }
                    case "rbind" -> {
                        flags |= MS_BIND | MS_REC;
                        type = "bind";
                    }
                    case "rro" -> attrs |= ATTR_RDONLY;
                    case "rnosuid" -> attrs |= ATTR_NOSUID;
                    case "rnodev" -> attrs |= ATTR_NODEV;
                    case "rnoexec" -> attrs |= ATTR_NOEXEC;
                    default -> data.add(o.asString());
                }
            }
            line(s, "mount", m.path("source").asString(), m.path("destination").asString(), type, Long.toString(flags),
                    String.join(",", data), Long.toString(attrs));
        }
        for (String d : DEVICES) {
            line(s, "device", "/dev/" + d, "/dev/" + d);
        }
        line(s, "symlink", "/proc/self/fd", "/dev/fd");
        line(s, "symlink", "/proc/self/fd/0", "/dev/stdin");
        line(s, "symlink", "/proc/self/fd/1", "/dev/stdout");
        line(s, "symlink", "/proc/self/fd/2", "/dev/stderr");
        line(s, "symlink", "pts/ptmx", "/dev/ptmx");
        linux.path("readonlyPaths").forEach(p -> line(s, "readonly", p.asString()));
        linux.path("maskedPaths").forEach(p -> line(s, "mask", p.asString()));
        for (JsonNode r : process.path("rlimits")) {
            Integer resource = RLIMITS.get(r.path("type").asString());
            require(resource != null, "an rlimit the launcher knows (" + RLIMITS.keySet() + "), not " + r.path("type").asString());
            line(s, "rlimit", resource.toString(), Long.toString(r.path("soft").asLong()), Long.toString(r.path("hard").asLong()));
        }
        line(s, "user", Long.toString(process.path("user").path("uid").asLong()), Long.toString(process.path("user").path("gid").asLong()));
        line(s, "cwd", process.path("cwd").asString("/"));
        process.path("env").forEach(e -> line(s, "env", e.asString()));
        process.path("args").forEach(a -> line(s, "arg", a.asString()));
        return s.toString();
    }

    private static void require(boolean held, String what) {
        if (!held) {
            throw AirlockException.internal("the bundle lacks " + what + ", which Airlock's runtime (airlock-launch) always gives", null);
        }
    }

    private static void line(StringBuilder s, String key, String... fields) {
        s.append(key);
        for (String f : fields) {
            if (f.indexOf('\t') >= 0 || f.indexOf('\n') >= 0 || f.indexOf('\0') >= 0) {
                throw AirlockException.invalid("'" + Printable.of(f, 200) + "' has a tab, newline or NUL, which Airlock's runtime"
                        + " (airlock-launch) cannot be given: rename it");
            }
            s.append('\t').append(f);
        }
        s.append('\n');
    }

    /**
     * Kills everything the sandbox runs (SIGKILL to its PID 1 ends its pid namespace; a frozen one
     * is thawed first, or the kill would wait), waits for its cgroups to empty, and removes them
     * and the record. True when the sandbox was known and nothing of it is left.
     */
    boolean delete(String id) {
        Path record = RECORDS.resolve(id);
        long[] pid = readRecord(record);
        if (pid != null) {
            try {
                LaunchCgroups.freeze(id, false);
            } catch (RuntimeException e) {
                // its freezer cgroup went already: nothing to thaw
            }
            // the recorded start time: a pid the kernel gave to another process since is never signalled
            ProcessHandle.of(pid[0]).filter(p -> started(p.pid()) == pid[1]).ifPresent(ProcessHandle::destroyForcibly);
        }
        long deadline = System.currentTimeMillis() + DELETE_WAIT_MILLIS;
        boolean removed;
        boolean interrupted = Thread.interrupted();
        try {
            while (!(removed = LaunchCgroups.remove(id)) && System.currentTimeMillis() < deadline) {
                try {
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            return Files.deleteIfExists(record) && pid != null && removed;
        } catch (IOException e) {
            return false;
        }
    }

    /** Ids of the sandboxes started by the launcher and not yet deleted. */
    static List<String> list() {
        List<String> ids = new ArrayList<>();
        try (DirectoryStream<Path> records = Files.newDirectoryStream(RECORDS)) {
            records.forEach(r -> ids.add(r.getFileName().toString()));
        } catch (IOException e) {
            // no record directory: nothing was started on this host
        }
        return ids;
    }

    private static long[] readRecord(Path record) {
        try {
            String[] f = Files.readString(record).strip().split(" ");
            return new long[] {Long.parseLong(f[0]), Long.parseLong(f[1])};
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** When process {@code pid} started, in epoch milliseconds as the JDK reads it; -1 when it is gone. */
    private static long started(long pid) {
        return ProcessHandle.of(pid).flatMap(p -> p.info().startInstant()).map(java.time.Instant::toEpochMilli).orElse(-1L);
    }
}
