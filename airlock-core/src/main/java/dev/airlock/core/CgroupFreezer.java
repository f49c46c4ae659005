package dev.airlock.core;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Freezes and thaws every process of one cgroup, the one way for both hierarchies: {@code
 * cgroup.freeze} on cgroup v2, the freezer controller's {@code freezer.state} on v1, and waits
 * until the kernel says it is done, at most {@link #WAIT_MILLIS}. A cgroup with neither is left
 * alone. Used where Airlock itself owns the cgroup: a microVM's QEMU and a sandbox of Airlock's own
 * container runtime.
 */
public final class CgroupFreezer {

    /** How long the kernel gets to freeze or thaw every process of a cgroup. */
    public static final long WAIT_MILLIS = 10_000;

    private CgroupFreezer() {
    }

    /** Freezes or thaws {@code cgroup} and waits until the kernel says it is. */
    public static void freeze(Path cgroup, boolean freeze) throws IOException {
        if (Files.isRegularFile(cgroup.resolve("cgroup.freeze"))) {
            Files.writeString(cgroup.resolve("cgroup.freeze"), freeze ? "1" : "0", StandardCharsets.US_ASCII);
            awaitLine(cgroup.resolve("cgroup.events"), freeze ? "frozen 1" : "frozen 0");
        } else if (Files.isRegularFile(cgroup.resolve("freezer.state"))) {
            Files.writeString(cgroup.resolve("freezer.state"), freeze ? "FROZEN" : "THAWED", StandardCharsets.US_ASCII);
            awaitLine(cgroup.resolve("freezer.state"), freeze ? "FROZEN" : "THAWED");
        }
    }

    /** Waits until {@code file} has the line {@code line}, for at most {@link #WAIT_MILLIS}. */
    private static void awaitLine(Path file, String line) throws IOException {
        long deadline = System.currentTimeMillis() + WAIT_MILLIS;
        while (!Files.readAllLines(file, StandardCharsets.US_ASCII).contains(line)) {
            if (System.currentTimeMillis() > deadline) {
                throw new IOException(file + " did not reach '" + line + "' within " + WAIT_MILLIS + " ms");
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while waiting for " + file);
            }
        }
    }
}
