package dev.airlock.oci;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.KernelFiles;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What this host supports, for {@code airlock doctor}: every finding is read off the host or
 * proven by starting a real sandbox, never assumed.
 */
public record HostReport(
        List<Check> checks,
        List<RuntimeCheck> runtimes,
        String defaultRuntime) {

    /** One host capability: whether it is there, and what was seen. */
    public record Check(String name, boolean ok, String detail) {
    }

    /**
     * One OCI runtime: installed or not, whether a real sandbox started and ran a command, and for
     * a container runtime that works, the median of {@value #TIMED_STARTS} sandbox starts (create to
     * agent ready, no warm pool) in milliseconds; NaN where not measured.
     */
    public record RuntimeCheck(String name, boolean installed, boolean works, String version, String detail, String isolation,
                               double startMillis) {

        public RuntimeCheck(String name, boolean installed, boolean works, String version, String detail, String isolation) {
            this(name, installed, works, version, detail, isolation, Double.NaN);
        }
    }

    /** Sandbox starts timed per container runtime, after the one that proves it works. */
    static final int TIMED_STARTS = 5;

    public static HostReport probe(OciDriverConfig config) {
        List<Check> checks = new ArrayList<>();
        checks.add(userNamespaces());
        checks.add(seccomp());
        checks.add(cgroups());
        checks.add(kvm());
        List<RuntimeCheck> runtimes = new ArrayList<>();
        for (String name : List.of("runc", "crun", Launcher.NAME, "runsc")) {
            runtimes.add(probeRuntime(config.withRuntime(name), name));
        }
        return new HostReport(checks, runtimes, config.runtime());
    }

    /** This report with one more runtime, proven by another driver (the microvm one), and {@code defaultRuntime} as the default. */
    public HostReport withRuntime(RuntimeCheck runtime, String defaultRuntime) {
        List<RuntimeCheck> all = new ArrayList<>(runtimes);
        all.add(runtime);
        return new HostReport(checks, List.copyOf(all), defaultRuntime);
    }

    public boolean defaultRuntimeWorks() {
        return runtimes.stream().anyMatch(r -> r.name().equals(defaultRuntime) && r.works());
    }

    private static RuntimeCheck probeRuntime(OciDriverConfig config, String name) {
        String isolation = switch (name) {
            case "runsc" -> "user-space kernel (gVisor): system calls served by the Sentry, not the host kernel";
            case Launcher.NAME -> "container (Airlock's own runtime, built in): namespaces, seccomp allow-list, cgroups, no capabilities;"
                    + " shares the host kernel";
            default -> "container: namespaces, seccomp allow-list, cgroups, no capabilities; shares the host kernel";
        };
        if (OciRuntime.locate(name) == null) {
            return new RuntimeCheck(name, false, false, "", "not installed", isolation);
        }
        String version = "";
        try (Engine engine = new Engine(new OciDriver(config))) {
            version = ((OciDriver) engine.driver()).runtime().version();
            boolean ok;
            String detail;
            try (Sandbox sandbox = engine.create(SandboxSpec.defaults())) {
                ExecResult r = sandbox.exec(ExecRequest.of("id", "-u"));
                ok = r.exitCode() == 0 && r.stdoutText().trim().equals("1000");
                detail = ok ? "started a sandbox and ran a command as uid 1000" : "sandbox started but 'id -u' gave: " + r.stdoutText().trim() + r.stderrText().trim();
            }
            double start = ok && !name.equals("runsc") ? medianStartMillis(engine) : Double.NaN;
            return new RuntimeCheck(name, true, ok, version, detail, isolation, start);
        } catch (RuntimeException e) {
            return new RuntimeCheck(name, true, false, version, "cannot start a sandbox: " + e.getMessage(), isolation);
        }
    }

    /** The median time of {@link #TIMED_STARTS} sandbox starts of {@code engine}, in milliseconds. */
    private static double medianStartMillis(Engine engine) {
        double[] times = new double[TIMED_STARTS];
        for (int i = 0; i < TIMED_STARTS; i++) {
            long t0 = System.nanoTime();
            try (Sandbox sandbox = engine.create(SandboxSpec.defaults())) {
                times[i] = (System.nanoTime() - t0) / 1e6;
            }
        }
        java.util.Arrays.sort(times);
        return times[TIMED_STARTS / 2];
    }

    /** The working container runtime whose sandboxes started fastest here, or null when none was timed. */
    public RuntimeCheck fastestContainerRuntime() {
        return runtimes.stream().filter(r -> r.works() && !Double.isNaN(r.startMillis()))
                .min(java.util.Comparator.comparingDouble(RuntimeCheck::startMillis)).orElse(null);
    }

    private static Check userNamespaces() {
        String max = read("/proc/sys/user/max_user_namespaces");
        boolean ok = !max.isEmpty() && !max.equals("0");
        return new Check("user namespaces", ok, ok ? "max_user_namespaces=" + max : "disabled (max_user_namespaces=" + max + ")");
    }

    private static Check seccomp() {
        boolean ok = read("/proc/self/status").lines().anyMatch(l -> l.startsWith("Seccomp:"));
        String actions = read("/proc/sys/kernel/seccomp/actions_avail");
        return new Check("seccomp", ok, ok ? "filter mode available" + (actions.isEmpty() ? "" : " (" + actions + ")") : "kernel built without seccomp");
    }

    private static Check cgroups() {
        if (Cgroups.isV2()) {
            String controllers = read("/sys/fs/cgroup/cgroup.controllers");
            boolean ok = controllers.contains("memory") && controllers.contains("pids") && controllers.contains("cpu");
            return new Check("cgroups", ok, "v2, controllers: " + controllers);
        }
        List<String> present = new ArrayList<>();
        for (String c : List.of("memory", "pids", "cpu", "cpuacct", "cpuset", "devices", "freezer", "blkio")) {
            if (Files.isDirectory(Path.of("/sys/fs/cgroup", c))) {
                present.add(c);
            }
        }
        boolean ok = present.containsAll(List.of("memory", "pids", "cpu"));
        String hybrid = Files.isDirectory(Path.of("/sys/fs/cgroup/unified")) ? " (hybrid: a v2 hierarchy is mounted at /sys/fs/cgroup/unified)" : "";
        return new Check("cgroups", ok, "v1, controllers: " + String.join(" ", present) + hybrid);
    }

    private static Check kvm() {
        Path dev = Path.of("/dev/kvm");
        if (!Files.exists(dev)) {
            return new Check("kvm", false, "no /dev/kvm: microVM guests can only be emulated (TCG, slow)");
        }
        // A device node proves nothing: only booting a guest does (the microvm runtime's line, where that driver is installed).
        return new Check("kvm", false, "/dev/kvm present, not proven: only a guest booted under it shows that it works (see the microvm runtime)");
    }

    private static String read(String file) {
        return KernelFiles.readOrEmpty(Path.of(file));
    }

    public String toText() {
        StringBuilder sb = new StringBuilder("Airlock doctor\n\nhost\n");
        for (Check c : checks) {
            sb.append(String.format("  %-16s %-4s %s%n", c.name(), c.ok() ? "yes" : "no", c.detail()));
        }
        sb.append("\nruntimes (oci driver, and microvm: its own driver)\n");
        for (RuntimeCheck r : runtimes) {
            String state = !r.installed() ? "missing" : r.works() ? "works" : "broken";
            sb.append(String.format("  %-7s %-8s %s%n", r.name(), state, r.version().isEmpty() ? r.detail() : r.version() + ": " + r.detail()));
            if (r.works()) {
                sb.append("          isolation: ").append(r.isolation()).append('\n');
            }
            if (!Double.isNaN(r.startMillis())) {
                sb.append(String.format("          start: %.1f ms (median of %d sandbox starts, no warm pool)%n", r.startMillis(), TIMED_STARTS));
            }
        }
        RuntimeCheck fastest = fastestContainerRuntime();
        if (fastest != null) {
            sb.append("\nfastest container runtime here: ").append(fastest.name())
                    .append(String.format(" (%.1f ms a start)", fastest.startMillis()))
                    .append(fastest.name().equals(defaultRuntime) ? "" : "; choose it with --runtime " + fastest.name()).append('\n');
        }
        sb.append("\ndefault runtime: ").append(defaultRuntime).append(defaultRuntimeWorks() ? " (works)" : " (NOT working)").append('\n');
        return sb.toString();
    }

    public String toJson() {
        JsonMapper json = JsonMapper.builder().build();
        ObjectNode root = json.createObjectNode();
        ArrayNode host = root.putArray("host");
        checks.forEach(c -> host.addObject().put("name", c.name()).put("ok", c.ok()).put("detail", c.detail()));
        ArrayNode rts = root.putArray("runtimes");
        runtimes.forEach(r -> rts.addObject().put("name", r.name()).put("installed", r.installed()).put("works", r.works())
                .put("version", r.version()).put("detail", r.detail()).put("isolation", r.isolation())
                .put("startMillis", Double.isNaN(r.startMillis()) ? null : r.startMillis()));
        RuntimeCheck fastest = fastestContainerRuntime();
        root.put("fastestContainerRuntime", fastest == null ? null : fastest.name());
        root.put("defaultRuntime", defaultRuntime);
        root.put("defaultRuntimeWorks", defaultRuntimeWorks());
        return json.writerWithDefaultPrettyPrinter().writeValueAsString(root);
    }
}
