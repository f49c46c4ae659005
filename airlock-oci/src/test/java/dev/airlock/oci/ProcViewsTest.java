package dev.airlock.oci;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The sandbox's /proc/meminfo is laid out as the kernel lays its own out, which tools parse by column as often as by name. */
class ProcViewsTest {

    @Test
    void meminfoRowsAreTheKernelsFormat() {
        for (long bytes : new long[]{0, 1024, 512L << 20, 64L << 30, 1L << 50}) {
            String kib = Long.toString(bytes / 1024);
            assertThat(ProcViews.meminfo(bytes).lines().toList())
                    .as("meminfo of %d bytes", bytes)
                    .startsWith(String.format("%-16s%8s kB", "MemTotal:", kib), String.format("%-16s%8s kB", "MemFree:", kib),
                            String.format("%-16s%8s kB", "MemAvailable:", kib), String.format("%-16s%8s kB", "Buffers:", "0"))
                    .endsWith(String.format("%-16s%8s kB", "SUnreclaim:", "0"))
                    .hasSize(18);
        }
    }

    @Test
    void statCountsTheCpusItIsAskedFor() {
        assertThat(ProcViews.stat(2).lines().filter(l -> l.startsWith("cpu")).toList()).hasSize(3);
    }
}
