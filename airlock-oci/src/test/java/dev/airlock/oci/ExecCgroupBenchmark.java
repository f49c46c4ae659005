package dev.airlock.oci;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.IsolationDriver.DriverSandbox;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxAgent.ProcessExit;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What an execution's own cgroup costs, printed, never asserted: {@code true} started through the
 * agent with a cgroup (EXEC_HELD, placement, RELEASE, removal at the end) against the same agent
 * without, alternating in one sandbox. Run it with
 * {@code mvn -o -pl airlock-oci test -Dtest=ExecCgroupBenchmark -Dairlock.bench=true}.
 */
@EnabledIfSystemProperty(named = "airlock.bench", matches = "true", disabledReason = "a benchmark: run with -Dairlock.bench=true")
class ExecCgroupBenchmark extends SandboxTestBase {

    private static final int RUNS = 400;

    @Test
    void execWithItsOwnCgroupVersusWithout() throws Exception {
        OciDriver driver = (OciDriver) engine.driver();
        DriverSandbox created = driver.create(SandboxId.random(driver.instance()), SandboxSpec.defaults());
        try {
            OciSandbox sandbox = (OciSandbox) created;
            assertThat(sandbox.execCgroups()).as("this host gives executions cgroups").isNotNull();
            ExecRequest request = new ExecRequest(List.of("/usr/bin/true"), Map.of("PATH", "/usr/bin:/bin"), "/", null, null);
            long[] with = new long[RUNS];
            long[] without = new long[RUNS];
            for (int i = -50; i < RUNS; i++) {   // the first 50 of each warm up
                long a = once(sandbox.agent(), request);
                long b = once(sandbox.agentClient(), request);
                if (i >= 0) {
                    with[i] = a;
                    without[i] = b;
                }
            }
            System.out.printf("exec of /usr/bin/true, %d runs each: without own cgroup %s; with own cgroup %s; median extra %.0f us%n",
                    RUNS, summary(without), summary(with), (percentile(with, 50) - percentile(without, 50)) / 1000.0);
            // Where the extra goes: the host's placement (find the pid, mkdir, move) and the removal, timed alone.
            ExecCgroups cgroups = sandbox.execCgroups();
            long[] place = new long[RUNS];
            long[] release = new long[RUNS];
            for (int i = 0; i < RUNS; i++) {
                int n = i;
                java.nio.file.Path[] cgroup = new java.nio.file.Path[1];
                var process = sandbox.agentClient().start(request, OutputListener.NONE, pid -> {
                    long t = System.nanoTime();
                    cgroup[0] = cgroups.place(pid);
                    place[n] = System.nanoTime() - t;
                });
                assertThat(process.await(Duration.ofSeconds(30))).isEqualTo(new ProcessExit(0, 0, null));
                long t = System.nanoTime();
                cgroups.release(cgroup[0]);
                release[i] = System.nanoTime() - t;
            }
            System.out.printf("of which placement %s; removal %s%n", summary(place), summary(release));
        } finally {
            created.destroy();
        }
    }

    private static long once(SandboxAgent agent, ExecRequest request) throws Exception {
        long start = System.nanoTime();
        ProcessExit exit = agent.start(request, OutputListener.NONE).await(Duration.ofSeconds(30));
        long took = System.nanoTime() - start;
        assertThat(exit).isEqualTo(new ProcessExit(0, 0, null));
        return took;
    }

    private static String summary(long[] nanos) {
        return String.format("p50 %.0f us, p95 %.0f us, p99 %.0f us", percentile(nanos, 50) / 1000.0, percentile(nanos, 95) / 1000.0,
                percentile(nanos, 99) / 1000.0);
    }

    private static double percentile(long[] nanos, int p) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }
}
