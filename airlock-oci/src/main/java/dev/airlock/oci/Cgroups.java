package dev.airlock.oci;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Where the runtime puts a sandbox's cgroups on this host, and the little Airlock reads from them
 * itself (the OOM-kill counter). Sandboxes live under one parent, {@value #PARENT}, in every
 * hierarchy, so leftovers are easy to find. The runtime creates and removes them.
 */
final class Cgroups {

    static final String PARENT = "airlock";
    private static final Path ROOT = Path.of("/sys/fs/cgroup");

    private Cgroups() {
    }

    /** The OCI {@code cgroupsPath} of a sandbox. */
    static String pathOf(String id) {
        return "/" + PARENT + "/" + id;
    }

    static boolean isV2() {
        return layout().v2;
    }

    /** Whether the host is cgroup v2 alone, and where its v2 hierarchy is: found once, as they do not change while Airlock runs. */
    private record Layout(boolean v2, Path v2Root) {
    }

    private static volatile Layout layout;

    private static Layout layout() {
        Layout found = layout;
        if (found == null) {
            // isRegularFile, not exists: asked without an exception for the file that is not there
            boolean v2 = Files.isRegularFile(ROOT.resolve("cgroup.controllers"));
            Path unified = ROOT.resolve("unified");
            found = new Layout(v2, v2 ? ROOT : Files.isRegularFile(unified.resolve("cgroup.controllers")) ? unified : null);
            layout = found;
        }
        return found;
    }

    /** The v1 hierarchy of one controller ({@code freezer}, {@code memory}...), mounted or not. */
    static Path v1Hierarchy(String controller) {
        return ROOT.resolve(controller);
    }

    /** The mounted hierarchies, listed once: the host's cgroup mounts do not change while Airlock runs. */
    private static volatile List<Path> hierarchies;

    /**
     * Every hierarchy: the whole tree on a v2 host; else each entry of {@code /sys/fs/cgroup}, links
     * to another (cpu to cpu,cpuacct) and the unified v2 mount of a hybrid host included.
     */
    static List<Path> hierarchies() {
        List<Path> listed = hierarchies;
        if (listed == null) {
            List<Path> found = new ArrayList<>();
            if (isV2()) {
                found.add(ROOT);
            } else {
                try (DirectoryStream<Path> mounted = Files.newDirectoryStream(ROOT)) {
                    mounted.forEach(found::add);
                } catch (IOException e) {
                    return List.of(); // no cgroups mounted: nothing of ours can be there (not remembered: they may be mounted later)
                }
            }
            listed = List.copyOf(found);
            hierarchies = listed;
        }
        return listed;
    }

    /** The parent of the sandboxes' cgroups ({@value #PARENT}) in every hierarchy, whether made yet or not. */
    private static List<Path> parents() {
        return hierarchies().stream().map(h -> h.resolve(PARENT)).toList();
    }

    /**
     * Sandbox {@code id}'s cgroups, one a hierarchy, as they are now: each directory found by its
     * path, so the cost does not grow with the number of sandboxes, as {@link #find}'s does.
     */
    static List<Path> of(String id) {
        return parents().stream().map(p -> p.resolve(id)).filter(c -> Files.isDirectory(c, java.nio.file.LinkOption.NOFOLLOW_LINKS)).toList();
    }

    /**
     * Whether any process is left in sandbox {@code id}'s cgroups, its exec cgroups included: the v2
     * hierarchy's {@code cgroup.events} says ("populated"), on a v2 host or beside v1 controllers;
     * null where there is none to ask (a v1-only host) or the cgroup is gone.
     */
    static Boolean populated(String id) {
        Path v2 = v2Root();
        if (v2 == null) {
            return null;
        }
        try {
            for (String line : Files.readAllLines(v2.resolve(PARENT).resolve(id).resolve("cgroup.events"))) {
                if (line.startsWith("populated ")) {
                    return !line.endsWith(" 0");
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    /**
     * The cgroup v2 hierarchy the runtime also places sandboxes in: the whole tree on a v2 host,
     * the unified mount beside the v1 controllers on a hybrid one; null on a v1-only host.
     */
    static Path v2Root() {
        return layout().v2Root;
    }

    /** Kernel OOM kills inside the sandbox's memory cgroup so far; 0 when it cannot be read. */
    static long oomKills(String id) {
        Path file = isV2()
                ? ROOT.resolve(PARENT).resolve(id).resolve("memory.events")
                : ROOT.resolve("memory").resolve(PARENT).resolve(id).resolve("memory.oom_control");
        try {
            for (String line : Files.readAllLines(file)) {
                if (line.startsWith("oom_kill ")) {
                    return Long.parseLong(line.substring("oom_kill ".length()).trim());
                }
            }
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
        return 0;
    }

    /**
     * The sandbox's CPU time and memory from its cgroup: {@code cpu.stat} and {@code memory.current}
     * on cgroup v2, {@code cpuacct.usage} and {@code memory.usage_in_bytes} on v1; null when they
     * cannot be read (the cgroup is gone, or the host mounts neither).
     */
    static dev.airlock.core.IsolationDriver.Usage usage(String id) {
        try {
            if (isV2()) {
                Path dir = ROOT.resolve(PARENT).resolve(id);
                long cpuMicros = -1;
                for (String line : Files.readAllLines(dir.resolve("cpu.stat"))) {
                    if (line.startsWith("usage_usec ")) {
                        cpuMicros = Long.parseLong(line.substring("usage_usec ".length()).trim());
                    }
                }
                long memory = Long.parseLong(Files.readString(dir.resolve("memory.current")).trim());
                return cpuMicros < 0 ? null : new dev.airlock.core.IsolationDriver.Usage(cpuMicros * 1000, memory);
            }
            long cpu = Long.parseLong(Files.readString(ROOT.resolve("cpuacct").resolve(PARENT).resolve(id).resolve("cpuacct.usage")).trim());
            long memory = Long.parseLong(Files.readString(ROOT.resolve("memory").resolve(PARENT).resolve(id).resolve("memory.usage_in_bytes")).trim());
            return new dev.airlock.core.IsolationDriver.Usage(cpu, memory);
        } catch (IOException | NumberFormatException e) {
            return null;
        }
    }

    /** Every sandbox cgroup directory on the host whose name starts with {@code prefix}. */
    static List<Path> find(String prefix) {
        List<Path> found = new ArrayList<>();
        for (Path parent : parents()) {
            if (!Files.isDirectory(parent)) {
                continue;
            }
            try (DirectoryStream<Path> children = Files.newDirectoryStream(parent, Files::isDirectory)) {
                for (Path child : children) {
                    if (child.getFileName().toString().startsWith(prefix)) {
                        found.add(child);
                    }
                }
            } catch (IOException e) {
                // a hierarchy we cannot read holds nothing we created
            }
        }
        return found;
    }

    /**
     * Removes an empty cgroup directory left by a runtime that died before deleting it, with the
     * (empty) cgroups of executions below it ({@link ExecCgroups}).
     */
    static boolean remove(Path cgroup) {
        try {
            // the common case first: no execution's cgroup is left below it (listing its files costs a stat each)
            Files.deleteIfExists(cgroup);
            return true;
        } catch (IOException busy) {
            // executions' cgroups below it, or a process still in it: below
        }
        try {
            try (DirectoryStream<Path> children = Files.newDirectoryStream(cgroup, Files::isDirectory)) {
                for (Path child : children) {
                    Files.deleteIfExists(child);
                }
            } catch (java.nio.file.NoSuchFileException gone) {
                return true;
            }
            Files.deleteIfExists(cgroup);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
