package dev.airlock.oci;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A cgroup of an engine instance that is gone is reaped by the next engine even when nothing else
 * of that instance remains (its state directory was removed while a runtime's process still held
 * the cgroup, and the process exited afterwards): nothing of a sandbox outlives its instance.
 */
class OrphanCgroupReapTest {

    @Test
    void aCgroupOfAGoneInstanceWithNoStateLeftIsReaped() throws Exception {
        String name = "al-zzgone01-0123456789abcdef";
        Path parent = Cgroups.isV2() ? Path.of("/sys/fs/cgroup/airlock") : Path.of("/sys/fs/cgroup/pids/airlock");
        Files.createDirectories(parent);
        Path orphan = parent.resolve(name);
        Files.createDirectory(orphan); // a cgroup: the kernel fills it with its control files
        try (OciDriver driver = new OciDriver(OciDriverConfig.defaults())) {
            driver.reapOrphans();
        } finally {
            if (Files.isDirectory(orphan)) {
                Cgroups.remove(orphan);
            }
        }
        assertThat(orphan).doesNotExist();
        assertThat(new LeakCheck(OciDriverConfig.defaults()).find("al-zzgone01-")).isEmpty();
    }
}
