package dev.airlock.microvm;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What microVM sandboxes left on this host, for {@code airlock leaks}: QEMU processes of this
 * driver's state root, the directories of its engine instances, its QEMU jails' claimed uids, and
 * QEMU cgroups (of any state root). To be run when no engine is
 * running: a live engine's guests are reported too. An empty list means nothing leaked.
 */
public final class MicroVmLeakCheck {

    private MicroVmLeakCheck() {
    }

    /** Every QEMU process and instance directory under {@code stateRoot} (the driver's, such as /run/airlock/microvm). */
    public static List<String> findAll(Path stateRoot) {
        List<String> leaks = find(stateRoot, "");
        Path engines = stateRoot.resolve("engines");
        if (Files.isDirectory(engines)) {
            try (DirectoryStream<Path> instances = Files.newDirectoryStream(engines)) {
                instances.forEach(i -> leaks.add("microvm: engine state " + i));
            } catch (IOException e) {
                leaks.add("microvm: cannot list " + engines + ": " + e.getMessage());
            }
        }
        return leaks;
    }

    /**
     * What is left of the guests whose sandbox ids start with {@code prefix} (such as
     * {@code al-<instance>-}, or a whole id), while their engine may still run: their QEMU processes
     * under {@code stateRoot}, cgroups, claimed uids and guest directories.
     */
    public static List<String> find(Path stateRoot, String prefix) {
        List<String> leaks = new ArrayList<>();
        String enginesPrefix = stateRoot.toAbsolutePath() + "/engines/";
        ProcessHandle.allProcesses().forEach(p -> {
            String instance = MicroVmDriver.instanceOf(p, enginesPrefix);
            if (instance != null && p.info().arguments().map(args -> String.join(" ", args)).orElse("")
                    .contains("/sandboxes/" + prefix)) {
                leaks.add("microvm: QEMU process " + p.pid() + " of instance " + instance);
            }
        });
        VmmJail.allCgroups().stream().filter(c -> c.getFileName().toString().startsWith(prefix))
                .forEach(c -> leaks.add("microvm: QEMU cgroup " + c));
        VmmJail.allUidSlots(stateRoot).stream().filter(s -> VmmJail.owner(s).startsWith(prefix))
                .forEach(s -> leaks.add("microvm: QEMU uid claimed " + s));
        Path engines = stateRoot.resolve("engines");
        if (Files.isDirectory(engines)) {
            try (DirectoryStream<Path> instances = Files.newDirectoryStream(engines)) {
                for (Path instance : instances) {
                    try (DirectoryStream<Path> guests = Files.newDirectoryStream(instance.resolve("sandboxes"), prefix + "*")) {
                        guests.forEach(g -> leaks.add("microvm: guest directory " + g));
                    } catch (java.nio.file.NoSuchFileException noGuests) {
                        // an instance without guests
                    }
                }
            } catch (IOException e) {
                leaks.add("microvm: cannot list " + engines + ": " + e.getMessage());
            }
        }
        return leaks;
    }

}
