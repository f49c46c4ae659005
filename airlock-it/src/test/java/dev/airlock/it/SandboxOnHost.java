package dev.airlock.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What one sandbox holds on this host — processes, runtime state, cgroups, host id slot, state
 * directory — looked up by its id, so that a test can watch that single sandbox disappear while
 * others run ({@link dev.airlock.oci.LeakCheck} counts the processes of every sandbox at once).
 * Capture it while the sandbox lives: its processes are found by the host id range it holds.
 */
final class SandboxOnHost {

    private static final int ID_RANGE = 65536;
    private static final Path STATE = LiveServer.DRIVER.stateRoot();

    final String id;
    private final long uidLow;
    private final long uidHigh;

    private SandboxOnHost(String id, long uidLow) {
        this.id = id;
        this.uidLow = uidLow;
        this.uidHigh = uidLow + ID_RANGE;
    }

    /** Finds the live sandbox {@code id} by its host id slot. */
    static SandboxOnHost of(String id) {
        try (DirectoryStream<Path> slots = Files.newDirectoryStream(STATE.resolve("uid-slots"))) {
            for (Path slot : slots) {
                if (Files.readString(slot, StandardCharsets.US_ASCII).trim().equals(id)) {
                    long n = Long.parseLong(slot.getFileName().toString());
                    return new SandboxOnHost(id, LiveServer.DRIVER.hostIdBase() + n * ID_RANGE);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        throw new AssertionError("sandbox " + id + " holds no host id slot under " + STATE.resolve("uid-slots"));
    }

    /** Host processes running as one of this sandbox's host ids. */
    List<String> processes() {
        List<String> found = new ArrayList<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), p -> p.getFileName().toString().matches("\\d+"))) {
            for (Path proc : procs) {
                try {
                    for (String line : Files.readAllLines(proc.resolve("status"))) {
                        if (line.startsWith("Uid:")) {
                            long uid = Long.parseLong(line.split("\\s+")[1]);
                            if (uid >= uidLow && uid < uidHigh) {
                                found.add("process: pid " + proc.getFileName() + " uid " + uid + " "
                                        + Files.readString(proc.resolve("cmdline")).replace('\0', ' ').trim());
                            }
                            break;
                        }
                    }
                } catch (IOException | RuntimeException gone) {
                    // the process ended while we looked
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return found;
    }

    /** Everything of this sandbox still on the host; empty once it is fully destroyed. */
    List<String> remains() {
        List<String> found = new ArrayList<>(processes());
        Path cgroups = Path.of("/sys/fs/cgroup");
        if (Files.isDirectory(cgroups.resolve("airlock").resolve(id))) {
            found.add("cgroup: " + cgroups.resolve("airlock").resolve(id));
        }
        try (DirectoryStream<Path> hierarchies = Files.newDirectoryStream(cgroups)) {
            for (Path h : hierarchies) {
                if (Files.isDirectory(h.resolve("airlock").resolve(id))) {
                    found.add("cgroup: " + h.resolve("airlock").resolve(id));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try (DirectoryStream<Path> slots = Files.newDirectoryStream(STATE.resolve("uid-slots"))) {
            for (Path slot : slots) {
                try {
                    if (Files.readString(slot, StandardCharsets.US_ASCII).trim().equals(id)) {
                        found.add("host id slot: " + slot);
                    }
                } catch (IOException released) {
                    // released while we looked
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Path engines = STATE.resolve("engines");
        if (Files.isDirectory(engines)) {
            try (DirectoryStream<Path> instances = Files.newDirectoryStream(engines)) {
                for (Path instance : instances) {
                    if (Files.exists(instance.resolve("sandboxes").resolve(id))) {
                        found.add("directory: " + instance.resolve("sandboxes").resolve(id));
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        if (runtimeKnows(id)) {
            found.add("runtime state: container " + id);
        }
        return found;
    }

    private static boolean runtimeKnows(String id) {
        try {
            Process p = new ProcessBuilder(LiveServer.DRIVER.runtime(), "list", "-q").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            return out.lines().anyMatch(id::equals);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
