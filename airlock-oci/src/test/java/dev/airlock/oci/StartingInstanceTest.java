package dev.airlock.oci;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An instance that is starting in another process has its directory before it has its lock: its
 * entry in the host registry, taken first, must keep every other engine's reaper from taking it
 * for dead and removing its directory from under it (two `airlock run` started at once lost their
 * image root that way). The other process is a python3 holding the registry entry's POSIX lock, as
 * a JVM's FileChannel lock is.
 */
class StartingInstanceTest {

    @Test
    void anInstanceHoldingOnlyItsRegistryLockIsNotDead(@TempDir Path tmp) throws Exception {
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rwx--x--x"));
        String starting = "zzstart" + ProcessHandle.current().pid() % 10;
        Path registered = StateDirectory.HOST_REGISTRY.resolve(starting);
        try (StateDirectory state = StateDirectory.create(tmp)) {
            Files.createDirectories(tmp.resolve("engines").resolve(starting).resolve("sandboxes"));
            Process holder = new ProcessBuilder("python3", "-c", "import fcntl, sys; f = open(sys.argv[1], 'w');"
                    + " fcntl.lockf(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()", registered.toString()).start();
            try (BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8))) {
                assertThat(out.readLine()).isEqualTo("held");
                assertThat(state.deadInstances()).as("an instance starting in another process").doesNotContain(starting);
            } finally {
                holder.getOutputStream().close();
                holder.waitFor(30, TimeUnit.SECONDS);
            }
            assertThat(state.deadInstances()).as("once its process is gone").contains(starting);
        } finally {
            Files.deleteIfExists(registered);
        }
    }
}
