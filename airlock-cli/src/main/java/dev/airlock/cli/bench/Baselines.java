package dev.airlock.cli.bench;

import dev.airlock.core.ExecResult;
import dev.airlock.oci.OciDriverConfig;
import dev.airlock.oci.RuncBaseline;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The same commands without Airlock: bare, under bubblewrap, and under plain {@code runc run}. */
public final class Baselines {

    public static final String PYTHON = "/usr/bin/python3";

    private Baselines() {
    }

    /**
     * The baselines of one run.
     *
     * @param bare       {@code python3 -c pass} bare: what the one-shot cases are compared to
     * @param bareP99    the p99 of the same runs: what a p99 of a one-shot case is compared to (a tail with a tail)
     * @param bareTrue   {@code true} bare: what the exec {@code true} cases are compared to
     * @param bubblewrap {@code python3 -c pass} under bubblewrap; null when bwrap is not installed
     * @param runc       {@code python3 -c pass} under plain {@code runc run}
     */
    public record Results(Stats bare, Stats bareP99, Stats bareTrue, Stats bubblewrap, Stats runc) {

        /** Every baseline measured, the bare one first. */
        public List<Stats> all() {
            List<Stats> all = new ArrayList<>(List.of(bare, bareP99, bareTrue));
            if (bubblewrap != null) {
                all.add(bubblewrap);
            }
            all.add(runc);
            return all;
        }
    }

    /** Bare {@code python3 -c pass} and {@code true}, then bubblewrap (when installed) and runc. */
    public static Results measure(Sampler sampler, OciDriverConfig config) throws Exception {
        String name = "bare: python3 -c pass";
        double[] runs = sampler.samples(name, () -> command(PYTHON, "-c", "pass"), null);
        Stats bare = Stats.of(Stats.LATENCY, name, "ms", runs);
        Stats bareP99 = Stats.p99(name, runs);
        Stats bareTrue = sampler.measure("bare: true", () -> command("/usr/bin/true"));
        Stats bubblewrap = null;
        if (Files.isExecutable(Path.of("/usr/bin/bwrap"))) {
            bubblewrap = sampler.measure("bubblewrap: python3 -c pass", () -> command(bwrap(PYTHON, "-c", "pass")));
        }
        try (RuncBaseline runc = new RuncBaseline(config, List.of(PYTHON, "-c", "pass"))) {
            return new Results(bare, bareP99, bareTrue, bubblewrap,
                    sampler.measure("runc run (same bundle, cold): python3 -c pass", runc::runOnce));
        }
    }

    static void check(ExecResult r) {
        if (r.exitCode() != 0) {
            throw new IllegalStateException("benchmark command failed: exit " + r.exitCode() + " " + r.stderrText());
        }
    }

    static void command(String... argv) throws IOException, InterruptedException {
        command(List.of(argv));
    }

    static void command(List<String> argv) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(argv).redirectInput(new File("/dev/null"))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", argv) + " exited with " + p.exitValue());
        }
    }

    /** bubblewrap with comparable isolation: every namespace, read-only /usr, fresh /tmp and /proc. */
    static List<String> bwrap(String... argv) {
        List<String> cmd = new ArrayList<>(List.of("/usr/bin/bwrap", "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--symlink", "usr/sbin", "/sbin", "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
                "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "--new-session"));
        cmd.addAll(List.of(argv));
        return cmd;
    }

    /** The CPU, kernel and Java this ran on. */
    public static String machine() {
        String cpu = "unknown cpu";
        try {
            cpu = Files.readAllLines(Path.of("/proc/cpuinfo")).stream().filter(l -> l.startsWith("model name"))
                    .findFirst().map(l -> l.substring(l.indexOf(':') + 1).trim()).orElse(cpu);
        } catch (IOException ignored) {
            // the CPU model is informative only
        }
        return Runtime.getRuntime().availableProcessors() + " cores, " + cpu + ", Linux " + System.getProperty("os.version")
                + ", Java " + Runtime.version();
    }
}
