package dev.airlock.oci;

import dev.airlock.agent.AgentBinary;
import dev.airlock.core.HostInputs;
import dev.airlock.core.Input;
import dev.airlock.core.Limits;
import dev.airlock.core.SandboxBroker;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes the OCI runtime configuration of one sandbox. Every hardening choice of the OCI driver is
 * made here, in one place: namespaces, id mappings, capabilities, seccomp, mounts, masked paths
 * and cgroup limits. The same bundle serves runc, crun and runsc.
 */
final class OciConfig {

    /** One OCI mount entry. */
    record Mount(String destination, String type, String source, List<String> options) {

        /**
         * A host directory or file, read-only, bound recursively: a host can have mounts below any
         * directory (driver mounts below /usr, WSL2's /usr/lib/wsl, a separate /usr/local), and a
         * non-recursive bind of such a directory is refused inside a user namespace (its submounts
         * are locked). The recursive attributes (rro, rnosuid, rnodev: mount_setattr with
         * AT_RECURSIVE) make every submount read-only, nosuid and nodev too; plain ro would leave
         * a read-write submount writable. Under gVisor see {@link OciConfig#RECURSIVE_ATTRIBUTES}.
         */
        static Mount bindReadOnly(Path source, String destination) {
            return new Mount(destination, "bind", source.toString(), List.of("rbind", "ro", "nosuid", "nodev", "rro", "rnosuid", "rnodev"));
        }

        /**
         * One input, read-only at {@code /inputs/<name>}. A plain {@code bind}, not {@code rbind}:
         * no host mount below the path is ever carried in (HostInputs refuses such a directory),
         * and "ro" covers all there is; with {@code rbind} the kernel would leave every submount
         * writable. nosuid and nodev: no set-id bit or file capability and no
         * device node of the host means anything inside. Not noexec: /tmp and /workspace allow
         * exec, so noexec would stop nothing (copy, chmod, run; or {@code python3 /inputs/x.py}),
         * but it would break inputs that hold tools, shared libraries or Python native extensions,
         * which need exec mappings.
         */
        static Mount input(Path realHostPath, String destination) {
            return new Mount(destination, "bind", realHostPath.toString(), List.of("bind", "ro", "nosuid", "nodev"));
        }

        static Mount tmpfs(String destination, long sizeBytes, int mode, int uid, boolean readOnly) {
            List<String> options = new ArrayList<>(List.of("nosuid", "nodev",
                    "size=" + sizeBytes, "mode=" + Integer.toOctalString(mode), "uid=" + uid, "gid=" + uid));
            if (readOnly) {
                options.add("ro");
            }
            return new Mount(destination, "tmpfs", "tmpfs", options);
        }
    }

    /** Host ids that sandbox ids 0..{@value #ID_RANGE}-1 map to: unused by any host account. */
    static final long DEFAULT_HOST_ID_BASE = 2_000_000_000L;
    static final int ID_RANGE = 65536;

    /**
     * The recursive mount attributes of {@link Mount#bindReadOnly}. runsc (this release) refuses
     * them as unknown; it needs none: its Sentry makes the whole tree of a read-only mount read-only,
     * whatever the host mounted below it, and never honours a set-id bit or a device node of a gofer
     * mount.
     */
    static final Set<String> RECURSIVE_ATTRIBUTES = Set.of("rro", "rnosuid", "rnodev");

    /**
     * Added to a sandbox's pids limit for the spare execution supervisor that waits beside the agent
     * (CgroupedAgent): the code gets the pids it was given, as without one.
     */
    static final int SPARE_PIDS = 1;
    /** Host threads of runsc's Sentry and gofer, added to a sandbox's pids limit under gVisor ({@link #forGvisor}). */
    static final int GVISOR_HOST_THREADS = 128;

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /**
     * Paths of /proc that disclose the host or let a process poke at the kernel: a file reads empty
     * (it is /dev/null), a directory is an empty read-only tmpfs, a path this kernel lacks stays absent.
     */
    static final List<String> MASKED_PATHS = List.of(
            "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
            "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/proc/kallsyms",
            "/proc/kmsg", "/proc/modules", "/proc/config.gz", "/proc/sysrq-trigger", "/sys/firmware",
            // who the host is: its boot parameters, its boot's id, the users holding kernel keys
            "/proc/cmdline", "/proc/sys/kernel/random/boot_id", "/proc/key-users",
            // its hardware: disks, devices, interrupt lines, I/O and memory maps, consoles, drivers
            "/proc/partitions", "/proc/devices", "/proc/misc", "/proc/interrupts", "/proc/ioports", "/proc/iomem",
            "/proc/dma", "/proc/mtrr", "/proc/consoles", "/proc/driver",
            // what the host and the other tenants are doing: memory zones and pages, scheduling, locks
            "/proc/vmstat", "/proc/zoneinfo", "/proc/buddyinfo", "/proc/pagetypeinfo", "/proc/vmallocinfo", "/proc/slabinfo",
            "/proc/softirqs", "/proc/schedstat", "/proc/locks", "/proc/kpagecount", "/proc/kpageflags", "/proc/kpagecgroup");
    private static final List<String> READONLY_PATHS = List.of(
            "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys");

    private OciConfig() {
    }

    /**
     * @param agentArgs   the agent's command line (PID 1 of the sandbox)
     * @param runDir      the host directory mounted at /run/airlock (the agent's socket)
     * @param cgroupsPath where the runtime creates the sandbox's cgroup
     */
    static ObjectNode config(SandboxRoot image, Limits limits, List<String> agentArgs, Map<String, String> env,
                             Path runDir, String cgroupsPath, long hostIdBase, ObjectNode seccomp) {
        return config(image, limits, agentArgs, env, runDir, null, List.of(), List.of(), cgroupsPath, hostIdBase, null, null, seccomp);
    }

    /**
     * @param inputsDir the host directory holding one mount point per input, mounted read-only at
     *                  /inputs (see {@link HostInputs#createMountPoints}); unused without inputs, when
     *                  /inputs stays the image's empty, read-only directory
     * @param inputs    the sandbox's inputs, already checked and resolved
     * @param procViews read-only files over the /proc entries that would describe the whole host
     *                  (see {@link ProcViews})
     * @param userNamespace the user namespace to join ({@link SandboxUserNamespace#path()}), already
     *                      mapped to {@code hostIdBase}; null to have the runtime create one. The
     *                      runtime cannot set rlimits inside a namespace host root does not own, so
     *                      with one the agent sets them ({@link #agentLimitArgs})
     * @param workspace the host mount to bind at /workspace (a {@link WorkspaceOverlay} of a
     *                  snapshot's files); null for a fresh tmpfs of the sandbox's disk size
     */
    static ObjectNode config(SandboxRoot image, Limits limits, List<String> agentArgs, Map<String, String> env,
                             Path runDir, Path inputsDir, List<HostInputs.Resolved> inputs, List<Mount> procViews,
                             String cgroupsPath, long hostIdBase, String userNamespace, Path workspace, ObjectNode seccomp) {
        ObjectNode root = JSON.createObjectNode();
        root.put("ociVersion", "1.0.2");

        ObjectNode process = root.putObject("process");
        process.put("terminal", false);
        ObjectNode user = process.putObject("user");
        user.put("uid", SystemImage.SANDBOX_UID);
        user.put("gid", SystemImage.SANDBOX_UID);
        ArrayNode args = process.putArray("args");
        agentArgs.forEach(args::add);
        ArrayNode envs = process.putArray("env");
        env.forEach((k, v) -> envs.add(k + "=" + v));
        process.put("cwd", "/workspace");
        // No capability in any set: the sandbox user has none, and cannot gain any.
        ObjectNode caps = process.putObject("capabilities");
        for (String set : List.of("bounding", "effective", "inheritable", "permitted", "ambient")) {
            caps.putArray(set);
        }
        if (userNamespace == null) {
            ArrayNode rlimits = process.putArray("rlimits");
            rlimit(rlimits, "RLIMIT_NOFILE", limits.openFiles());
            rlimit(rlimits, "RLIMIT_FSIZE", limits.fileSizeBytes());
            rlimit(rlimits, "RLIMIT_CORE", 0);
        }
        process.put("noNewPrivileges", true);

        ObjectNode rootfs = root.putObject("root");
        rootfs.put("path", image.rootfs().toString());
        rootfs.put("readonly", true);
        root.put("hostname", "sandbox");

        ArrayNode mounts = root.putArray("mounts");
        mount(mounts, new Mount("/proc", "proc", "proc", List.of("nosuid", "noexec", "nodev")));
        procViews.forEach(m -> mount(mounts, m));
        mount(mounts, new Mount("/dev", "tmpfs", "tmpfs", List.of("nosuid", "strictatime", "mode=755", "size=65536")));
        // The sandbox's own pseudo-terminals (an exec with a tty): a new devpts instance, seeing none of the host's;
        // the runtime links /dev/ptmx to its ptmx. No gid option: the sandbox maps no tty group.
        mount(mounts, new Mount("/dev/pts", "devpts", "devpts", List.of("nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620")));
        // The runtime creates /dev/shm with mode 0755, whatever the options say: owning it makes it usable.
        mount(mounts, Mount.tmpfs("/dev/shm", Math.min(limits.diskBytes(), 64L << 20), 01777, SystemImage.SANDBOX_UID, false));
        image.mounts().forEach(m -> mount(mounts, m));
        mount(mounts, Mount.tmpfs("/tmp", limits.diskBytes(), 01777, 0, false));
        // A plain bind of the overlay (nothing is mounted below it), nosuid and nodev as the overlay itself is.
        mount(mounts, workspace == null ? Mount.tmpfs("/workspace", limits.diskBytes(), 0755, SystemImage.SANDBOX_UID, false)
                : new Mount("/workspace", "bind", workspace.toString(), List.of("bind", "nosuid", "nodev")));
        mount(mounts, Mount.bindReadOnly(runDir, "/run/airlock"));
        if (!inputs.isEmpty()) {
            // A per-sandbox directory of mount points, so the shared image never changes.
            mount(mounts, Mount.bindReadOnly(inputsDir, Input.MOUNT_ROOT));
            inputs.forEach(in -> mount(mounts, Mount.input(in.realPath(), in.input().sandboxPath())));
        }

        ObjectNode linux = root.putObject("linux");
        ArrayNode namespaces = linux.putArray("namespaces");
        // A fresh network namespace holds only lo: no route out exists.
        for (String ns : List.of("pid", "network", "ipc", "uts", "mount", "user", "cgroup")) {
            ObjectNode node = namespaces.addObject().put("type", ns);
            if (ns.equals("user") && userNamespace != null) {
                node.put("path", userNamespace);
            }
        }
        idMapping(linux.putArray("uidMappings"), hostIdBase);
        idMapping(linux.putArray("gidMappings"), hostIdBase);
        linux.put("cgroupsPath", cgroupsPath);
        ObjectNode resources = linux.putObject("resources");
        ObjectNode memory = resources.putObject("memory");
        memory.put("limit", limits.memoryBytes());
        memory.put("swap", limits.memoryBytes());
        resources.putObject("pids").put("limit", limits.pids() + SPARE_PIDS);
        ObjectNode cpu = resources.putObject("cpu");
        long period = 100_000;
        cpu.put("period", period);
        cpu.put("quota", Math.max(1000, Math.round(limits.cpus() * period)));
        ArrayNode masked = linux.putArray("maskedPaths");
        MASKED_PATHS.forEach(masked::add);
        ArrayNode readonly = linux.putArray("readonlyPaths");
        READONLY_PATHS.forEach(readonly::add);
        // the caller's profile itself, not a copy: every change below (weaken, forGvisor) is made to a copy of the whole
        linux.set("seccomp", seccomp);
        return root;
    }

    /** {@code config} as the bundle's {@code config.json}. */
    static byte[] json(ObjectNode config) {
        return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(config);
    }

    /**
     * A copy of {@code config} (as made by {@link #config}) with the given controls left out: the
     * seccomp section, the network namespace; {@code config} itself when none is. Only {@code airlock
     * verify --unsafe} asks for this.
     */
    static ObjectNode weaken(ObjectNode config, Set<Weakening> weakenings) {
        if (weakenings.isEmpty()) {
            return config;
        }
        ObjectNode root = config.deepCopy();
        ObjectNode linux = (ObjectNode) root.get("linux");
        if (weakenings.contains(Weakening.NO_SECCOMP)) {
            linux.remove("seccomp");
        }
        if (weakenings.contains(Weakening.HOST_NETWORK_NAMESPACE)) {
            ArrayNode kept = JSON.createArrayNode();
            linux.get("namespaces").forEach(ns -> {
                if (!"network".equals(ns.get("type").asString())) {
                    kept.add(ns);
                }
            });
            linux.set("namespaces", kept);
        }
        return root;
    }

    /**
     * A copy of {@code config} (as made by {@link #config}) as gVisor's runsc takes it. Four changes, each
     * because runsc cannot take the runc form; every other control is left as it is:
     * <ul>
     *   <li>no user namespace and no id mappings: runsc's gofer (its file server) cannot set up the
     *       read-only root inside a user namespace of ours (the remount fails with EPERM in this
     *       release), and the sandbox's users are the Sentry's own anyway: runsc runs the Sentry as
     *       host {@code nobody} in a user namespace it makes, and no sandbox process is a host process;</li>
     *   <li>the pids limit plus {@link #GVISOR_HOST_THREADS}: the host cgroup holds the Sentry's and
     *       gofer's threads, not the sandbox's processes;</li>
     *   <li>the pids limit as RLIMIT_NPROC too: the Sentry counts its own tasks (processes and
     *       threads) against it, and every one of them, the agent included, runs as the sandbox user.
     *       It stops a thread bomb with EAGAIN as the pids cgroup does under runc; a fork bomb reaches
     *       the host cgroup first (each sandbox process costs the Sentry several host threads), which
     *       ends the whole sandbox;</li>
     *   <li>clone3 allowed by the seccomp profile: runsc turns every refusal into EPERM, and glibc
     *       falls back to clone only on ENOSYS, which the Sentry (not implementing clone3) gives.</li>
     * </ul>
     */
    static ObjectNode forGvisor(ObjectNode config) {
        ObjectNode root = config.deepCopy();
        ObjectNode linux = (ObjectNode) root.get("linux");
        ArrayNode kept = JSON.createArrayNode();
        linux.get("namespaces").forEach(ns -> {
            if (!"user".equals(ns.get("type").asString())) {
                kept.add(ns);
            }
        });
        linux.set("namespaces", kept);
        linux.remove("uidMappings");
        linux.remove("gidMappings");
        // The host pids cgroup holds the Sentry's and the gofer's host threads (about 100 for an idle
        // sandbox here), not the sandbox's processes: on the limit alone runsc could not even start.
        ObjectNode pids = (ObjectNode) linux.path("resources").path("pids");
        if (pids.has("limit")) {
            long limit = pids.get("limit").asLong() - SPARE_PIDS;   // no spare supervisor under gVisor
            pids.put("limit", limit + GVISOR_HOST_THREADS);
            // What does count the sandbox's processes is the Sentry's RLIMIT_NPROC: all of them are the
            // sandbox user's, and the hard limit cannot be raised from inside (no CAP_SYS_RESOURCE).
            if (root.path("process").get("rlimits") instanceof ArrayNode rlimits) {
                rlimit(rlimits, "RLIMIT_NPROC", limit);
            }
        }
        root.get("mounts").forEach(mount -> {
            if (mount.get("options") instanceof ArrayNode options) {
                for (int i = options.size() - 1; i >= 0; i--) {
                    if (RECURSIVE_ATTRIBUTES.contains(options.get(i).asString())) {
                        options.remove(i);
                    }
                }
            }
        });
        if (linux.get("seccomp") instanceof ObjectNode seccomp) {
            // The Sentry answers every refused call with EPERM, whatever errnoRet says (this release
            // ignores it), and glibc falls back from clone3 to clone only on ENOSYS: refused, clone3
            // would stop every thread from starting. Allowed, it reaches the Sentry, which does not
            // implement it and answers ENOSYS itself, so glibc uses clone, whose flags the filter sees.
            seccomp.get("syscalls").forEach(rule -> {
                if ("SCMP_ACT_ERRNO".equals(rule.path("action").asString()) && rule.path("names").size() == 1
                        && "clone3".equals(rule.path("names").get(0).asString())) {
                    ((ObjectNode) rule).put("action", "SCMP_ACT_ALLOW");
                    ((ObjectNode) rule).remove("errnoRet");
                }
            });
        }
        return root;
    }

    /** The agent's command line: its limits, its egress bridge when it has one, and the socket it connects to. */
    static List<String> agentCommand(Limits limits, boolean bridged, String socketName) {
        List<String> command = new ArrayList<>();
        command.add(SystemImage.AGENT_DIR + "/" + AgentBinary.FILE_NAME);
        command.addAll(agentLimitArgs(limits));
        if (bridged) {
            command.addAll(List.of("--egress-port", String.valueOf(SandboxBroker.BRIDGE_PORT),
                    "--egress-socket", SandboxBroker.RUN_DIR + "/" + SandboxBroker.BRIDGE_SOCKET));
        }
        command.add(SandboxBroker.RUN_DIR + "/" + socketName);
        return command;
    }

    /** The agent's environment: a PATH, nothing of the host's. */
    static Map<String, String> agentEnvironment() {
        Map<String, String> env = new LinkedHashMap<>();
        env.put("PATH", "/usr/bin:/bin:/usr/sbin:/sbin");
        return env;
    }

    /** The agent options that make it set the sandbox's rlimits itself (RLIMIT_CORE is always 0). */
    static List<String> agentLimitArgs(Limits limits) {
        return List.of("--nofile", Integer.toString(limits.openFiles()), "--fsize", Long.toString(limits.fileSizeBytes()));
    }

    private static void rlimit(ArrayNode rlimits, String type, long value) {
        ObjectNode r = rlimits.addObject();
        r.put("type", type);
        r.put("hard", value);
        r.put("soft", value);
    }

    private static void mount(ArrayNode mounts, Mount m) {
        ObjectNode node = mounts.addObject();
        node.put("destination", m.destination());
        node.put("type", m.type());
        node.put("source", m.source());
        ArrayNode options = node.putArray("options");
        m.options().forEach(options::add);
    }

    private static void idMapping(ArrayNode mappings, long hostIdBase) {
        ObjectNode m = mappings.addObject();
        m.put("containerID", 0);
        m.put("hostID", hostIdBase);
        m.put("size", ID_RANGE);
    }
}
