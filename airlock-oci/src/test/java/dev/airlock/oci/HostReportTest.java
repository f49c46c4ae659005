package dev.airlock.oci;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** What {@code airlock doctor} reports is what the host's kernel says, digit for digit. */
class HostReportTest {

    @Test
    void doctorShowsTheWholeMaxUserNamespacesValue() throws IOException {
        String kernel = Files.readAllLines(Path.of("/proc/sys/user/max_user_namespaces")).getFirst().strip();

        HostReport report = HostReport.probe(SandboxTestBase.CONFIG);

        HostReport.Check userNamespaces = report.checks().stream().filter(c -> c.name().equals("user namespaces")).findFirst().orElseThrow();
        assertThat(userNamespaces.detail()).isEqualTo("max_user_namespaces=" + kernel);
        assertThat(report.toText()).contains("max_user_namespaces=" + kernel + "\n");
    }
}
