package dev.airlock.core;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Instance liveness, which every driver's reaper trusts before it kills or removes anything. Another
 * process is played by a python3 holding a registry entry's POSIX lock, as a JVM's FileChannel lock is.
 */
class EngineInstanceTest {

    private static final EngineInstance.Directory NOTHING = new EngineInstance.Directory() {
        @Override
        public void prepare(Path dir) {
        }

        @Override
        public void dispose(Path dir) {
        }
    };

    /**
     * An instance that is starting in another process has its directory before it has its lock: its
     * entry in the host registry, taken first, must keep every other engine's reaper from taking it
     * for dead and removing its directory from under it (two `airlock run` started at once lost their
     * image root that way).
     */
    @Test
    void anInstanceHoldingOnlyItsRegistryLockIsNotDead(@TempDir Path tmp) throws Exception {
        String starting = "zzstart" + ProcessHandle.current().pid() % 10;
        try (EngineInstance instance = EngineInstance.create(tmp, "rwx--x--x", NOTHING)) {
            Files.createDirectories(tmp.resolve("engines").resolve(starting).resolve("sandboxes"));
            try (RegistryHolder holder = new RegistryHolder(starting)) {
                assertThat(instance.deadInstances()).as("an instance starting in another process").doesNotContain(starting);
            }
            assertThat(instance.deadInstances()).as("once its process is gone").contains(starting);
        }
    }

    /**
     * Sandboxes are host-wide (QEMU processes, runtime state, cgroups) while state roots are not: an
     * instance alive in another process on another state root must be alive to an engine on this one,
     * whatever the driver, or that engine's reaper would kill its guests.
     */
    @Test
    void anInstanceOnAnotherStateRootIsAliveToEveryRoot(@TempDir Path tmp) throws Exception {
        String elsewhere = "zzother" + ProcessHandle.current().pid() % 10;
        try (EngineInstance here = EngineInstance.create(tmp.resolve("here"), "rwx------", NOTHING)) {
            try (RegistryHolder holder = new RegistryHolder(elsewhere)) {
                assertThat(here.isAlive(elsewhere)).as("alive in another process, its directory on another root").isTrue();
            }
            assertThat(here.isAlive(elsewhere)).as("once its process is gone").isFalse();
        }
    }

    @Test
    void closeRemovesTheDirectoryTheDriversPartsAndTheRegistryEntry(@TempDir Path tmp) throws IOException {
        List<String> calls = new ArrayList<>();
        EngineInstance.Directory parts = new EngineInstance.Directory() {
            @Override
            public void prepare(Path dir) throws IOException {
                calls.add("prepare " + dir.getFileName());
                Files.writeString(dir.resolve("driver-part"), "x");
            }

            @Override
            public void dispose(Path dir) {
                calls.add("dispose " + dir.getFileName());
            }
        };
        EngineInstance instance = EngineInstance.create(tmp, "rwx------", parts);
        String name = instance.name();
        assertThat(instance.dir()).isEqualTo(tmp.resolve("engines").resolve(name));
        assertThat(instance.dir().resolve("driver-part")).exists();
        assertThat(instance.sandboxDir("al-x")).isEqualTo(instance.dir().resolve("sandboxes").resolve("al-x"));
        assertThat(EngineInstance.HOST_REGISTRY.resolve(name)).exists();
        assertThat(EngineInstance.isAlive(tmp, name)).isTrue();
        instance.close();
        assertThat(calls).containsExactly("prepare " + name, "dispose " + name);
        assertThat(tmp.resolve("engines").resolve(name)).doesNotExist();
        assertThat(EngineInstance.HOST_REGISTRY.resolve(name)).doesNotExist();
        assertThat(EngineInstance.isAlive(tmp, name)).isFalse();
    }

    @Test
    void aDriverPartThatFailsLeavesNothingOfTheInstance(@TempDir Path tmp) {
        EngineInstance.Directory failing = new EngineInstance.Directory() {
            @Override
            public void prepare(Path dir) throws IOException {
                throw new IOException("no tmpfs here");
            }

            @Override
            public void dispose(Path dir) {
            }
        };
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> EngineInstance.create(tmp, "rwx------", failing))
                .isInstanceOf(IOException.class).hasMessage("no tmpfs here");
        assertThat(tmp.resolve("engines")).isEmptyDirectory();
    }

    /** Another process holding {@code name}'s lock in the host registry until closed. */
    private static final class RegistryHolder implements AutoCloseable {
        private final Path registered;
        private final Process holder;

        RegistryHolder(String name) throws IOException {
            Files.createDirectories(EngineInstance.HOST_REGISTRY);
            registered = EngineInstance.HOST_REGISTRY.resolve(name);
            holder = new ProcessBuilder("python3", "-c", "import fcntl, sys; f = open(sys.argv[1], 'w');"
                    + " fcntl.lockf(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()", registered.toString()).start();
            BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            assertThat(out.readLine()).isEqualTo("held");
        }

        @Override
        public void close() throws IOException {
            holder.getOutputStream().close();
            try {
                holder.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                holder.destroyForcibly();
                Files.deleteIfExists(registered);
            }
        }
    }
}
