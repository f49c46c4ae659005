package dev.airlock.cli;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock bench --quick --json} as a user runs it: every case is there with a positive
 * median (the host MemAvailable drop excepted: with the few sandboxes of a quick run it is within
 * the noise of the rest of the host and may come out negative). The figures themselves depend on
 * the host and are not checked.
 */
class BenchCommandTest {

    @AfterEach
    void nothingOfAnySandboxRemains() {
        assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty();
    }

    @Test
    void quickJsonRunHasEveryCaseWithAPositiveMedian() throws Exception {
        CliProcess cli = CliProcess.run("bench", "--quick", "--json");
        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        JsonNode json = JsonMapper.builder().build().readTree(cli.stdout());

        assertThat(json.get("machine").asString()).contains("cores");
        assertThat(json.get("method").propertyNames()).containsExactly("latency", "throughput", "memory", "egress");
        List<String> names = new ArrayList<>();
        for (JsonNode c : json.get("cases")) {
            String name = c.get("name").asString();
            names.add(name);
            if (name.contains("MemAvailable drop")) {
                // The host-wide figure: a few idle sandboxes are within the noise of other processes, so any sign.
                assertThat(Double.isFinite(c.get("median").asDouble())).as("median of %s", name).isTrue();
            } else {
                assertThat(c.get("median").asDouble()).as("median of %s", name).isPositive();
            }
            assertThat(c.has("p10") && c.has("p90") && c.has("ratio")).as("fields of %s", name).isTrue();
            assertThat(c.get("unit").asString()).as("unit of %s", name).isNotEmpty();
        }
        assertThat(names).containsExactlyElementsOf(expectedCases());
    }

    private static List<String> expectedCases() {
        List<String> cases = new ArrayList<>(List.of("bare: python3 -c pass"));
        if (Files.isExecutable(Path.of("/usr/bin/bwrap"))) {
            cases.add("bubblewrap: python3 -c pass");
        }
        cases.addAll(List.of("runc run (same bundle, cold): python3 -c pass",
                "airlock one-shot, warm pool: python pass",
                "airlock exec into a sandbox: python3 -c pass",
                "bare: true",
                "airlock exec into a sandbox: true",
                "airlock create from warm pool",
                "server: create from warm pool (POST /v1/sandboxes)",
                "server: exec true (POST .../exec)",
                "server: exec python3 -c pass",
                "server: one-shot python3 -c pass (create, exec, delete)",
                "airlock one-shot, cold: python pass"));
        for (int p : new int[]{1, 2, 4, 8}) {
            cases.add("bare: python3 -c pass, " + p + " parallel");
            cases.add("airlock one-shot, warm pool " + p + ": python pass, " + p + " parallel");
        }
        for (int n : new int[]{10, 50}) {
            cases.add("memory: " + n + " idle sandboxes: memory cgroup usage per sandbox");
            cases.add("memory: " + n + " idle sandboxes: host MemAvailable drop per sandbox");
        }
        cases.add("egress: 100 MB download, direct (Java client)");
        cases.add("egress: 100 MB download through EgressProxy (Java client)");
        if (Files.isExecutable(Path.of("/usr/bin/curl"))) {
            cases.add("egress: 100 MB download, curl on the host");
            cases.add("egress: 100 MB download, curl in a sandbox (agent + proxy)");
        }
        return cases;
    }
}
