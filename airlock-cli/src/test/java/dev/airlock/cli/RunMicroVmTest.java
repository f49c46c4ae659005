package dev.airlock.cli;

import dev.airlock.microvm.MicroVmDriverConfig;
import dev.airlock.microvm.MicroVmLeakCheck;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock run --runtime microvm} as a user runs it: one real guest boot (seconds under
 * software emulation), and after the CLI ends no QEMU process or guest state of its own remains.
 */
class RunMicroVmTest {

    @Test
    void runsPythonInAGuestAndLeavesNothing() throws Exception {
        List<String> before = MicroVmLeakCheck.findAll(MicroVmDriverConfig.defaults().stateRoot());

        CliProcess cli = CliProcess.run(Duration.ofMinutes(3), "run", "--runtime", "microvm", "--lang", "python", "--code", "print(6*7)");

        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        assertThat(cli.stdout()).isEqualTo("42\n");
        List<String> left = new ArrayList<>(MicroVmLeakCheck.findAll(MicroVmDriverConfig.defaults().stateRoot()));
        left.removeAll(before);
        assertThat(left).as("QEMU processes and guest state the CLI left").isEmpty();
    }

    @Test
    void anUnknownAcceleratorIsRefusedBeforeAnythingBootsSayingWhatToGive() throws Exception {
        CliProcess cli = CliProcess.run("run", "--runtime", "microvm", "--microvm-accelerator", "hvf", "--lang", "sh", "--code", "true");
        assertThat(cli.exitCode()).isEqualTo(2);
        assertThat(cli.stderr()).contains("accelerator 'hvf' is unknown").contains("tcg").contains("kvm");
    }

    @Test
    void aCommandThatDrivesOnlyOciRuntimesRefusesMicrovmSayingWhatToGive() throws Exception {
        CliProcess cli = CliProcess.run("bench", "--runtime", "microvm", "--quick");
        assertThat(cli.exitCode()).isNotZero();
        assertThat(cli.stderr()).contains("does not support --runtime microvm yet").contains("runc");
    }
}
