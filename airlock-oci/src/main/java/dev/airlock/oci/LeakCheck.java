package dev.airlock.oci;

import dev.airlock.core.EngineInstance;
import dev.airlock.core.HostInputs;
import dev.airlock.core.KernelFiles;
import dev.airlock.core.SandboxId;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Finds what sandboxes left on this host: processes running as a sandbox uid, runtime state,
 * cgroups, mounts and state directories. Used after every test class, at the end of the test
 * suite ({@code airlock leaks}), and by operators. An empty list means nothing leaked.
 */
public final class LeakCheck {

    private final OciDriverConfig config;

    public LeakCheck(OciDriverConfig config) {
        this.config = config;
    }

    /** How long leftovers get to disappear: a killed sandbox's PID 1 is reaped by the host's init. */
    private static final long SETTLE_MILLIS = 15_000;

    /**
     * Everything left behind by sandboxes whose ids start with {@code prefix} ("al-" for all),
     * after giving exiting processes time to be reaped.
     */
    public List<String> find(String prefix) {
        long deadline = System.currentTimeMillis() + SETTLE_MILLIS;
        List<String> leaks = findNow(prefix);
        while (!leaks.isEmpty() && System.currentTimeMillis() < deadline) {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            leaks = findNow(prefix);
        }
        return leaks;
    }

    /**
     * What sandboxes of engine instances that have ended left behind: a leak, whoever made it.
     * Sandboxes of instances still running (another test run, a server on this host) are theirs
     * and are left out, so a check after a command's own processes ended is not confused by them.
     */
    public List<String> findOfEndedEngines() {
        return find("al-").stream().filter(line -> {
            Matcher m = SANDBOX_ID.matcher(line);
            return !m.find() || !EngineInstance.isAlive(config.stateRoot(), SandboxId.instanceOf(m.group()));
        }).toList();
    }

    /** " of <sandbox id>", the sandbox that holds a uid slot, so that a leak line names its engine. */
    private static String slotOwner(Path slot) {
        try {
            return " of " + Files.readString(slot, java.nio.charset.StandardCharsets.US_ASCII).strip();
        } catch (IOException e) {
            return ""; // released while we looked
        }
    }

    private static final Pattern SANDBOX_ID = Pattern.compile("al-[a-z0-9]{1,16}-[a-f0-9]{16}");

    /**
     * What sandboxes whose ids start with {@code prefix} have on the host at this moment, without
     * waiting for anything to go: for a check that expects something to be there (a live sandbox's
     * mounts, a crashed instance's state), which {@link #find} would wait out to its end.
     */
    public List<String> findNow(String prefix) {
        List<String> leaks = new ArrayList<>();
        leaks.addAll(sandboxProcesses(prefix));
        OciRuntime runtime = Launcher.NAME.equals(config.runtime()) || OciRuntime.locate(config.runtime()) == null ? null
                : OciRuntime.find(config.runtime());
        if (runtime != null) {
            runtime.list().stream().filter(id -> id.startsWith(prefix)).forEach(id -> leaks.add("runtime state: container " + id));
        }
        // Airlock's own runtime's records, whichever runtime this engine was given: they need no program to read
        Launcher.list().stream().filter(id -> id.startsWith(prefix)).forEach(id -> leaks.add("runtime state: airlock-launch record " + id));
        Cgroups.find(prefix).forEach(p -> leaks.add("cgroup: " + p));
        new UidSlots(config.stateRoot(), config.hostIdBase()).held(prefix).forEach(p -> leaks.add("host id range: " + p + slotOwner(p)));
        leaks.addAll(mounts(prefix));
        leaks.addAll(sandboxDirectories(prefix));
        return leaks;
    }

    /**
     * Everything any sandbox left, plus state directories of engine instances: to be run when no
     * engine is running, such as at the end of the test suite.
     */
    public List<String> findAll() {
        List<String> leaks = find("al-");
        Path engines = config.stateRoot().resolve("engines");
        if (Files.isDirectory(engines)) {
            try (DirectoryStream<Path> instances = Files.newDirectoryStream(engines)) {
                instances.forEach(i -> leaks.add("engine state: " + i));
            } catch (IOException e) {
                leaks.add("cannot list " + engines + ": " + e.getMessage());
            }
        }
        return leaks;
    }

    /**
     * Host processes that belong to a sandbox whose id starts with {@code prefix} (by their cgroup),
     * whatever their uid (runsc's Sentry and gofer have none of the sandbox's). A process with a
     * sandbox uid outside every sandbox cgroup belongs to no one and is always reported.
     */
    private List<String> sandboxProcesses(String prefix) {
        List<String> found = new ArrayList<>();
        long low = config.hostIdBase(), high = UidSlots.end(config.hostIdBase());
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
            for (Path proc : procs) {
                try {
                    for (String line : Files.readAllLines(proc.resolve("status"))) {
                        if (line.startsWith("Uid:")) {
                            long uid = Long.parseLong(line.split("\\s+")[1]);
                            String owner = sandboxOf(proc);
                            // Under runsc the sandbox's host processes (the Sentry, as nobody, and the gofer, as root)
                            // have no sandbox uid: their cgroup names them.
                            boolean sandboxUid = uid >= low && uid < high;
                            if ((sandboxUid && owner == null) || (owner != null && owner.startsWith(prefix))) {
                                String cmd = KernelFiles.read(proc.resolve("cmdline")).replace('\0', ' ').trim();
                                found.add("process: pid " + proc.getFileName() + " uid " + uid + (owner == null ? "" : " of " + owner) + " " + cmd);
                            }
                            break;
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // the process ended while we looked
                }
            }
        } catch (IOException e) {
            found.add("cannot list /proc: " + e.getMessage());
        }
        return found;
    }

    /** The sandbox id in the process's cgroup path ({@code .../airlock/<id>}), or null. */
    private static String sandboxOf(Path proc) {
        try {
            for (String line : Files.readAllLines(proc.resolve("cgroup"))) {
                int at = line.indexOf("/" + Cgroups.PARENT + "/");
                if (at >= 0) {
                    String rest = line.substring(at + Cgroups.PARENT.length() + 2);
                    int slash = rest.indexOf('/');
                    return slash < 0 ? rest : rest.substring(0, slash);
                }
            }
        } catch (IOException e) {
            return null;
        }
        return null;
    }

    /**
     * Mounts under the state root of the engine instance {@code prefix} names ({@code al-<instance>-...});
     * for "al-", of every instance. Another live engine's mounts are its own, not this one's leftovers.
     */
    private List<String> mounts(String prefix) {
        List<String> found = new ArrayList<>();
        try {
            Path engines = config.stateRoot().resolve("engines");
            int end = prefix.indexOf('-', 3);
            Path instanceDir = prefix.startsWith("al-") && end > 3 ? engines.resolve(prefix.substring(3, end)) : null;
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                if (!line.contains(config.stateRoot().toString() + "/")) {
                    continue;
                }
                // A live instance's own tmpfs (InstanceTmpfs) is no leftover; a dead one's is.
                String[] fields = line.split(" ");
                Path point = fields.length > 4 ? Path.of(HostInputs.unescapeMountPath(fields[4])) : null;
                if (instanceDir != null && point != null && !point.startsWith(instanceDir)) {
                    continue;
                }
                if (point != null && engines.equals(point.getParent())
                        && EngineInstance.isAlive(config.stateRoot(), point.getFileName().toString())) {
                    continue;
                }
                found.add("mount: " + line);
            }
        } catch (IOException e) {
            found.add("cannot read mountinfo: " + e.getMessage());
        }
        return found;
    }

    private List<String> sandboxDirectories(String prefix) {
        List<String> found = new ArrayList<>();
        Path engines = config.stateRoot().resolve("engines");
        if (!Files.isDirectory(engines)) {
            return found;
        }
        try (DirectoryStream<Path> instances = Files.newDirectoryStream(engines)) {
            for (Path instance : instances) {
                Path sandboxes = instance.resolve("sandboxes");
                if (!Files.isDirectory(sandboxes)) {
                    continue;
                }
                try (DirectoryStream<Path> dirs = Files.newDirectoryStream(sandboxes)) {
                    for (Path dir : dirs) {
                        if (dir.getFileName().toString().startsWith(prefix)) {
                            found.add("directory: " + dir);
                        }
                    }
                }
            }
        } catch (IOException e) {
            found.add("cannot list " + engines + ": " + e.getMessage());
        }
        return found;
    }
}
