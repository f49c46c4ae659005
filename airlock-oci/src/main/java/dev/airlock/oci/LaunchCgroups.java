package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.CgroupFreezer;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The cgroups of a sandbox of Airlock's own runtime ({@link Launcher}), made, limited, frozen and
 * removed by the host as runc would from the bundle's resources: under the same paths
 * ({@link Cgroups#pathOf}), so everything else of the driver (executions' cgroups, OOM counts,
 * usage, the leak check) reads them as it reads runc's.
 */
final class LaunchCgroups {

    private LaunchCgroups() {
    }

    /**
     * The sandbox's cgroup in every hierarchy runc would place it in (each v1 controller's and the
     * v2 tree), made and limited as the bundle's resources say; returns the directories to join.
     */
    static List<Path> make(String id, JsonNode resources) {
        List<Path> made = new ArrayList<>();
        try {
            Path v2 = Cgroups.v2Root();
            if (!Cgroups.isV2()) {
                for (Path h : v1Hierarchies(v2)) {
                    Path parent = existing(h.resolve(Cgroups.PARENT));
                    Path dir = parent.resolve(id);
                    Files.createDirectory(dir);
                    made.add(dir);
                    limitV1(h.getFileName().toString(), dir, resources);
                }
            }
            if (v2 != null) {
                Path parent = existing(v2.resolve(Cgroups.PARENT));
                if (Cgroups.isV2()) {
                    enable(v2);
                    enable(parent);
                }
                Path dir = parent.resolve(id);
                Files.createDirectory(dir);
                made.add(dir);
                if (Cgroups.isV2()) {
                    limitV2(dir, resources);
                }
            }
            return made;
        } catch (IOException | RuntimeException e) {
            remove(id);
            throw AirlockException.unavailable("cannot make the cgroups of sandbox " + id + ": " + e.getMessage());
        }
    }

    /** {@code dir}, made if it is not there (asked first: making one that is there costs an exception, with its stack). */
    private static Path existing(Path dir) throws IOException {
        return Files.isDirectory(dir) ? dir : Files.createDirectories(dir);
    }

    /** The v1 hierarchies a sandbox gets a cgroup in ({@link #v1Hierarchies}), picked once from {@link Cgroups#hierarchies}. */
    private static volatile List<Path> v1Hierarchies;

    /** Every mounted v1 hierarchy: not a link to another (cpu to cpu,cpuacct), not the v2 one ({@code v2}), with processes of its own. */
    private static List<Path> v1Hierarchies(Path v2) {
        List<Path> found = v1Hierarchies;
        if (found == null) {
            found = Cgroups.hierarchies().stream().filter(h -> !Files.isSymbolicLink(h) && Files.isDirectory(h, LinkOption.NOFOLLOW_LINKS)
                    && !h.equals(v2) && Files.isRegularFile(h.resolve("cgroup.procs"))).toList();
            v1Hierarchies = found;
        }
        return found;
    }

    /** A new v1 cpuset group has no cpus or memory nodes: it takes its parent's, as runc gives it. */
    private static void inheritCpuset(Path hierarchy, Path parent) throws IOException {
        for (String file : List.of("cpuset.cpus", "cpuset.mems")) {
            if (Files.readString(parent.resolve(file)).isBlank()) {
                Files.writeString(parent.resolve(file), Files.readString(hierarchy.resolve(file)).strip());
            }
        }
    }

    private static void limitV1(String controller, Path dir, JsonNode resources) throws IOException {
        switch (controller) {
            case "cpuset" -> {
                inheritCpuset(dir.getParent().getParent(), dir.getParent());
                inheritCpuset(dir.getParent(), dir);
            }
            case "memory" -> {
                long limit = resources.path("memory").path("limit").asLong(0);
                if (limit > 0) {
                    Files.writeString(dir.resolve("memory.limit_in_bytes"), Long.toString(limit));
                    long swap = resources.path("memory").path("swap").asLong(0);
                    if (swap > 0 && Files.isRegularFile(dir.resolve("memory.memsw.limit_in_bytes"))) {
                        Files.writeString(dir.resolve("memory.memsw.limit_in_bytes"), Long.toString(swap));
                    }
                }
            }
            case "pids" -> {
                long limit = resources.path("pids").path("limit").asLong(0);
                if (limit > 0) {
                    Files.writeString(dir.resolve("pids.max"), Long.toString(limit));
                }
            }
            case "cpu", "cpu,cpuacct" -> {
                long period = resources.path("cpu").path("period").asLong(0);
                long quota = resources.path("cpu").path("quota").asLong(0);
                if (period > 0 && quota > 0) {
                    Files.writeString(dir.resolve("cpu.cfs_period_us"), Long.toString(period));
                    Files.writeString(dir.resolve("cpu.cfs_quota_us"), Long.toString(quota));
                }
            }
            case "devices" -> {
                // runc's default device rules: nothing but the harmless character devices and terminals
                Files.writeString(dir.resolve("devices.deny"), "a");
                for (String rule : List.of("c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", "c 5:0 rwm",
                        "c 5:2 rwm", "c 136:* rwm")) {
                    Files.writeString(dir.resolve("devices.allow"), rule);
                }
            }
            default -> { }
        }
    }

    private static void enable(Path group) throws IOException {
        String available = Files.readString(group.resolve("cgroup.controllers"));
        StringBuilder wanted = new StringBuilder();
        for (String c : List.of("cpu", "memory", "pids")) {
            if (available.contains(c)) {
                wanted.append(" +").append(c);
            }
        }
        if (!wanted.isEmpty()) {
            Files.writeString(group.resolve("cgroup.subtree_control"), wanted.toString().strip());
        }
    }

    private static void limitV2(Path dir, JsonNode resources) throws IOException {
        long memory = resources.path("memory").path("limit").asLong(0);
        if (memory > 0 && Files.exists(dir.resolve("memory.max"))) {
            Files.writeString(dir.resolve("memory.max"), Long.toString(memory));
            if (Files.exists(dir.resolve("memory.swap.max"))) {
                long swap = resources.path("memory").path("swap").asLong(memory);
                Files.writeString(dir.resolve("memory.swap.max"), Long.toString(Math.max(0, swap - memory)));
            }
        }
        long pids = resources.path("pids").path("limit").asLong(0);
        if (pids > 0 && Files.exists(dir.resolve("pids.max"))) {
            Files.writeString(dir.resolve("pids.max"), Long.toString(pids));
        }
        long period = resources.path("cpu").path("period").asLong(0);
        long quota = resources.path("cpu").path("quota").asLong(0);
        if (period > 0 && quota > 0 && Files.exists(dir.resolve("cpu.max"))) {
            Files.writeString(dir.resolve("cpu.max"), quota + " " + period);
        }
    }

    /** Removes the sandbox's cgroups that are empty (with its executions' below them); true when none is left. */
    static boolean remove(String id) {
        if (Boolean.TRUE.equals(Cgroups.populated(id))) {
            return false; // a process is still leaving: no rmdir that could only fail
        }
        boolean all = true;
        for (Path c : Cgroups.of(id)) {
            all &= Cgroups.remove(c) && !Files.isDirectory(c, LinkOption.NOFOLLOW_LINKS);
        }
        return all;
    }

    /** Freezes or thaws every process of the sandbox through its cgroup (v2 cgroup.freeze, else the v1 freezer). */
    static void freeze(String id, boolean freeze) {
        Path v2 = Cgroups.v2Root();
        Path cgroup = Cgroups.isV2() ? v2.resolve(Cgroups.PARENT).resolve(id) : Cgroups.v1Hierarchy("freezer").resolve(Cgroups.PARENT).resolve(id);
        try {
            CgroupFreezer.freeze(cgroup, freeze);
        } catch (IOException e) {
            throw AirlockException.internal("cannot " + (freeze ? "freeze" : "thaw") + " sandbox " + id + ": " + e.getMessage(), e);
        }
    }
}
