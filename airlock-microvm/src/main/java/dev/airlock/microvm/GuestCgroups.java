package dev.airlock.microvm;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The cgroup files of jailed QEMUs ({@link VmmJail}): v2 or the v1 controllers, made, written,
 * thawed (freezing: {@link dev.airlock.core.CgroupFreezer}), emptied with SIGKILL (bounded by {@link #KILL_WAIT_MILLIS}) and removed.
 */
final class GuestCgroups {

    /** How long the kernel gets to freeze, thaw, or end every process of a cgroup after SIGKILL. */
    static final long KILL_WAIT_MILLIS = 10_000;
    private static final Logger LOG = LoggerFactory.getLogger(GuestCgroups.class);
    private static final Path CGROUP_ROOT = Path.of("/sys/fs/cgroup");
    private static final long CPU_PERIOD_US = 100_000;

    private GuestCgroups() {
    }

    /**
     * Makes the cgroups of the guest {@code sandbox}'s QEMU (v2: one; v1: memory, pids, cpu and
     * freezer), adding each to {@code made} as it is made: {@code memoryBytes} with no swap beyond,
     * {@link VmmJail#VMM_PIDS} threads, {@code cpus} of CPU time (at least one).
     */
    static void make(String sandbox, long memory, double cpus, List<Path> made) throws IOException {
        long quota = Math.round(Math.max(1.0, cpus) * CPU_PERIOD_US);
        if (isV2()) {
            Path parent = CGROUP_ROOT.resolve(VmmJail.CGROUP_PARENT);
            enableControllers(CGROUP_ROOT);
            Files.createDirectories(parent);
            enableControllers(parent);
            Path dir = mkdir(parent.resolve(sandbox), made);
            write(dir.resolve("memory.max"), Long.toString(memory));
            write(dir.resolve("memory.swap.max"), "0");
            write(dir.resolve("pids.max"), Integer.toString(VmmJail.VMM_PIDS));
            write(dir.resolve("cpu.max"), quota + " " + CPU_PERIOD_US);
        } else {
            Path memoryDir = mkdir(v1(("memory")).resolve(VmmJail.CGROUP_PARENT).resolve(sandbox), made);
            write(memoryDir.resolve("memory.limit_in_bytes"), Long.toString(memory));
            if (Files.exists(memoryDir.resolve("memory.memsw.limit_in_bytes"))) {
                write(memoryDir.resolve("memory.memsw.limit_in_bytes"), Long.toString(memory)); // no swap beyond it
            }
            Path pidsDir = mkdir(v1("pids").resolve(VmmJail.CGROUP_PARENT).resolve(sandbox), made);
            write(pidsDir.resolve("pids.max"), Integer.toString(VmmJail.VMM_PIDS));
            Path cpuDir = mkdir(v1("cpu").resolve(VmmJail.CGROUP_PARENT).resolve(sandbox), made);
            write(cpuDir.resolve("cpu.cfs_period_us"), Long.toString(CPU_PERIOD_US));
            write(cpuDir.resolve("cpu.cfs_quota_us"), Long.toString(quota));
            mkdir(v1("freezer").resolve(VmmJail.CGROUP_PARENT).resolve(sandbox), made); // for pause; v2 has cgroup.freeze
        }
    }

    /** Thaws a cgroup that may be frozen, so that SIGKILL reaches its processes; a cgroup without a freezer is left alone. */
    static void thaw(Path cgroup) {
        try {
            if (Files.exists(cgroup.resolve("cgroup.freeze"))) {
                write(cgroup.resolve("cgroup.freeze"), "0");
            } else if (Files.exists(cgroup.resolve("freezer.state"))) {
                write(cgroup.resolve("freezer.state"), "THAWED");
            }
        } catch (IOException e) {
            LOG.warn("cannot thaw {}: {}", cgroup, e.getMessage());
        }
    }

    /** SIGKILL to every process of {@code cgroup} until none is left, for at most {@link #KILL_WAIT_MILLIS}. */
    static void killAll(Path cgroup) {
        long deadline = System.currentTimeMillis() + KILL_WAIT_MILLIS;
        Path procs = cgroup.resolve("cgroup.procs");
        while (true) {
            List<Long> pids = readPids(procs);
            if (pids.isEmpty()) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                LOG.warn("processes {} of {} did not end within {} ms of SIGKILL", pids, cgroup, KILL_WAIT_MILLIS);
                return;
            }
            pids.forEach(pid -> ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly));
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    static boolean isV2() {
        return Files.exists(CGROUP_ROOT.resolve("cgroup.controllers"));
    }

    private static Path v1(String controller) {
        return CGROUP_ROOT.resolve(controller);
    }

    static List<Path> parents() {
        return isV2() ? List.of(CGROUP_ROOT.resolve(VmmJail.CGROUP_PARENT))
                : List.of(v1("memory").resolve(VmmJail.CGROUP_PARENT), v1("pids").resolve(VmmJail.CGROUP_PARENT), v1("cpu").resolve(VmmJail.CGROUP_PARENT),
                        v1("freezer").resolve(VmmJail.CGROUP_PARENT));
    }

    private static void enableControllers(Path cgroup) throws IOException {
        write(cgroup.resolve("cgroup.subtree_control"), "+memory +pids +cpu");
    }

    private static Path mkdir(Path dir, List<Path> made) throws IOException {
        Files.createDirectories(dir.getParent());
        Files.createDirectory(dir);
        made.add(dir);
        return dir;
    }

    private static void write(Path file, String value) throws IOException {
        Files.writeString(file, value, StandardCharsets.US_ASCII);
    }

    static List<Long> readPids(Path procs) {
        try {
            return Files.readAllLines(procs, StandardCharsets.US_ASCII).stream().map(String::strip).filter(l -> !l.isEmpty())
                    .map(Long::parseLong).toList();
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            return List.of();
        }
    }

    static List<Path> children(Path dir) {
        List<Path> found = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return found;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
            for (Path entry : entries) {
                if (entry.getFileName().toString().startsWith("al-") || entry.getFileName().toString().matches("\\d+")) {
                    found.add(entry);
                }
            }
        } catch (IOException e) {
            return found;
        }
        return found;
    }

    /** A cgroup directory goes with rmdir only (its files are the kernel's); one already gone is fine. */
    static void removeCgroup(Path cgroup) {
        try {
            Files.deleteIfExists(cgroup);
        } catch (IOException e) {
            LOG.warn("cannot remove cgroup {}: {}", cgroup, e.getMessage());
        }
    }
}
