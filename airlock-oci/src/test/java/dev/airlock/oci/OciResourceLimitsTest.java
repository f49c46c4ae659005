package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Limits;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.OptionalLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * The limits as this driver applies them, beyond what the driver contract checks: the agent
 * lowers the rlimits it inherits from the server (so it cannot give more than the server has),
 * and the CPU quota is a cgroup's, whose throttling counter the kernel keeps.
 */
class OciResourceLimitsTest extends SandboxTestBase {

    /**
     * The agent sets the rlimits by lowering what it inherits from the server: a limit above the
     * server's own hard limit cannot be given, and is refused before anything starts, saying what
     * to change.
     */
    @Test
    void openFilesAboveTheServersOwnHardLimitIsRefusedBeforeAnythingStarts() {
        OptionalLong hard = ServerLimits.hardLimit("Max open files");
        assumeThat(hard.orElse(Long.MAX_VALUE)).as("a finite hard limit on open files below the largest sandbox limit")
                .isLessThan(1 << 20);
        Limits tooMany = Limits.DEFAULTS.withOpenFiles((int) hard.getAsLong() + 1);
        assertThatThrownBy(() -> engine.create(new SandboxSpec(SandboxSpec.SYSTEM_IMAGE, tooMany, Map.of())))
                .isInstanceOf(AirlockException.class)
                .hasMessageContaining("open files limit of " + (hard.getAsLong() + 1))
                .hasMessageContaining("hard limit of " + hard.getAsLong())
                .hasMessageContaining("ulimit -Hn");
    }

    /**
     * With a tenth of a core, a spinning process is throttled by the CPU quota: the kernel counts
     * throttled periods in the sandbox's cgroup, and the process gets far less CPU time than the
     * time it spun.
     */
    @Test
    void cpuQuotaThrottlesASpinningProcess() throws IOException {
        try (Sandbox sandbox = engine.create(new SandboxSpec(SandboxSpec.SYSTEM_IMAGE, Limits.DEFAULTS.withCpus(0.1), Map.of()))) {
            ExecResult r = ok(sandbox.exec(ExecRequest.of("python3", "-c", """
                    import os, time
                    t0, c0 = time.monotonic(), os.times()
                    while time.monotonic() - t0 < 1.0:
                        pass
                    c1 = os.times()
                    print(round((c1.user + c1.system) - (c0.user + c0.system), 3), round(time.monotonic() - t0, 3))
                    """)));
            double[] v = Arrays.stream(r.stdoutText().trim().split(" ")).mapToDouble(Double::parseDouble).toArray();
            assertThat(v[0]).as("CPU seconds used while spinning %s s", v[1]).isLessThan(v[1] * 0.5);
            Path cpuStat = Cgroups.isV2()
                    ? Path.of("/sys/fs/cgroup", Cgroups.pathOf(sandbox.id().value()).substring(1), "cpu.stat")
                    : Path.of("/sys/fs/cgroup/cpu", Cgroups.pathOf(sandbox.id().value()).substring(1), "cpu.stat");
            long throttled = Files.readAllLines(cpuStat).stream().filter(l -> l.startsWith("nr_throttled "))
                    .mapToLong(l -> Long.parseLong(l.split(" ")[1])).findFirst().orElseThrow();
            assertThat(throttled).as("nr_throttled of %s", cpuStat).isPositive();
        }
    }
}
