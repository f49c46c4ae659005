package dev.airlock.oci;

import dev.airlock.core.KernelFiles;
import dev.airlock.core.Limits;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sandbox's own /proc/meminfo, /proc/cpuinfo, /proc/stat, /proc/loadavg, /proc/diskstats and
 * /proc/swaps: small files written per sandbox and bind-mounted read-only over the kernel's, which
 * describe the whole host (its memory, its CPUs and their load, its disks and swap). What lxcfs does
 * with a FUSE daemon, done here without one, so the files are static: written once at creation,
 * they show the sandbox's limits, never its use.
 *
 * <ul>
 *   <li>meminfo: MemTotal, MemFree and MemAvailable are the memory limit; no swap; the rest 0.</li>
 *   <li>cpuinfo: the host's first {@code ceil(cpus)} processors (their model is visible through
 *       {@code cpuid} anyway), counted as that many siblings.</li>
 *   <li>stat: that many CPUs (glibc counts them here for {@code sysconf(_SC_NPROCESSORS_ONLN)}), all
 *       counters 0; {@code btime} is the host's, which {@code CLOCK_BOOTTIME} gives away anyway, so
 *       that {@code ps} shows right start times.</li>
 *   <li>loadavg 0, no disks, no swap areas.</li>
 * </ul>
 *
 * runc allows bind mounts over exactly these entries of /proc (the ones lxcfs emulates). Not
 * for runsc: gVisor's /proc is its own, made up per sandbox.
 */
final class ProcViews {

    private static final List<String> HOST_CPUS = hostCpuBlocks();
    private static final String HOST_BTIME = KernelFiles.readOrEmpty(Path.of("/proc/stat")).lines()
            .filter(l -> l.startsWith("btime ")).findFirst().orElse("btime 0");

    /** cpuinfo and stat for 1 to (the host's processors) CPUs: they depend on nothing else, so they are made once. */
    private static final List<String> CPUINFO = perCount(ProcViews::cpuinfo);
    private static final List<String> STAT = perCount(ProcViews::stat);

    private ProcViews() {
    }

    private static List<String> perCount(java.util.function.IntFunction<String> view) {
        List<String> views = new ArrayList<>();
        for (int cpus = 1; cpus <= Math.max(1, HOST_CPUS.size()); cpus++) {
            views.add(view.apply(cpus));
        }
        return List.copyOf(views);
    }

    /** Writes the views into {@code dir} (created) and returns their read-only mounts over /proc. */
    static List<OciConfig.Mount> write(Path dir, Limits limits) throws IOException {
        Files.createDirectories(dir);
        int cpus = (int) Math.max(1, Math.min(Math.ceil(limits.cpus()), Math.max(1, HOST_CPUS.size())));
        Map<String, String> views = new LinkedHashMap<>();
        views.put("meminfo", meminfo(limits.memoryBytes()));
        views.put("cpuinfo", CPUINFO.get(cpus - 1));
        views.put("stat", STAT.get(cpus - 1));
        views.put("loadavg", "0.00 0.00 0.00 1/1 1\n");
        views.put("diskstats", "");
        views.put("swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n");
        List<OciConfig.Mount> mounts = new ArrayList<>();
        for (Map.Entry<String, String> view : views.entrySet()) {
            String name = view.getKey();
            Path file = dir.resolve(name);
            Files.writeString(file, view.getValue(), StandardCharsets.US_ASCII);
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--r--r--"));
            mounts.add(OciConfig.Mount.bindReadOnly(file, "/proc/" + name));
        }
        return mounts;
    }

    static String meminfo(long memoryBytes) {
        String kib = Long.toString(memoryBytes / 1024);
        StringBuilder sb = new StringBuilder(MEMINFO_ZEROS.length() + 100);
        line(sb, "MemTotal", kib);
        line(sb, "MemFree", kib);
        line(sb, "MemAvailable", kib);
        return sb.append(MEMINFO_ZEROS).toString();
    }

    /** The rows of meminfo that are always 0. */
    private static final String MEMINFO_ZEROS = zeros();

    private static String zeros() {
        StringBuilder sb = new StringBuilder();
        for (String zero : List.of("Buffers", "Cached", "SwapCached", "Active", "Inactive", "SwapTotal", "SwapFree", "Dirty",
                "Writeback", "AnonPages", "Mapped", "Shmem", "Slab", "SReclaimable", "SUnreclaim")) {
            line(sb, zero, "0");
        }
        return sb.toString();
    }

    /** One row as the kernel writes it ("%-16s%8lu kB"; a create makes three, so without String.format). */
    private static void line(StringBuilder sb, String field, String kib) {
        sb.append(field).append(':').repeat(' ', Math.max(0, 15 - field.length())).repeat(' ', Math.max(0, 8 - kib.length()))
                .append(kib).append(" kB\n");
    }

    static String cpuinfo(int cpus) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < cpus && i < HOST_CPUS.size(); i++) {
            for (String line : HOST_CPUS.get(i).split("\n")) {
                String key = line.split(":", 2)[0].strip();
                sb.append(switch (key) {
                    case "siblings", "cpu cores" -> line.substring(0, line.indexOf(':') + 1) + " " + cpus;
                    default -> line;
                }).append('\n');
            }
            sb.append('\n');
        }
        return sb.toString();
    }

    static String stat(int cpus) {
        String zeros = " 0 0 0 0 0 0 0 0 0 0";
        StringBuilder sb = new StringBuilder("cpu ").append(zeros).append('\n');
        for (int i = 0; i < cpus; i++) {
            sb.append("cpu").append(i).append(zeros).append('\n');
        }
        return sb.append("intr 0\nctxt 0\n").append(HOST_BTIME).append('\n')
                .append("processes 0\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n").toString();
    }

    /** The host's processors, one /proc/cpuinfo block each (read once: they do not change). */
    private static List<String> hostCpuBlocks() {
        try {
            String all = String.join("\n", Files.readAllLines(Path.of("/proc/cpuinfo")));
            List<String> blocks = new ArrayList<>();
            for (String block : all.split("\n\n")) {
                if (block.startsWith("processor")) {
                    blocks.add(block.strip());
                }
            }
            return List.copyOf(blocks);
        } catch (IOException e) {
            return List.of();
        }
    }
}
