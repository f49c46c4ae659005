package dev.airlock.core;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/** Against this host's real /proc: the values are compared with what the kernel gives a line reader. */
class KernelFilesTest {

    /** A sysctl of several digits reads whole: pid_max is at least 301 (and 32768 by default). */
    @Test
    void integerSysctlOfSeveralDigitsReadsWhole() throws IOException {
        Path pidMax = Path.of("/proc/sys/kernel/pid_max");
        String value = KernelFiles.read(pidMax);
        assertThat(value).matches("\\d{3,}");
        assertThat(value).isEqualTo(Files.readAllLines(pidMax).getFirst().strip());
    }

    @Test
    void maxUserNamespacesReadsWhole() throws IOException {
        Path max = Path.of("/proc/sys/user/max_user_namespaces");
        assumeThat(Files.exists(max)).as("kernel with user namespaces").isTrue();
        String expected = Files.readAllLines(max).getFirst().strip();
        assumeThat(expected.length()).as("a value of more than one digit on this host").isGreaterThan(1);
        assertThat(KernelFiles.read(max)).isEqualTo(expected);
    }

    /** Seq files larger than one read still come whole. */
    @Test
    void multiLineProcFileReadsWhole() throws IOException {
        Path status = Path.of("/proc/self/status");
        String text = KernelFiles.read(status);
        assertThat(text).startsWith("Name:").contains("\nUid:").contains("\nVmRSS:");
        assertThat(text.lines().count()).isGreaterThan(20);
    }

    @Test
    void missingFileReadsAsEmpty() {
        assertThat(KernelFiles.readOrEmpty(Path.of("/proc/sys/airlock/no-such-sysctl"))).isEmpty();
    }
}
