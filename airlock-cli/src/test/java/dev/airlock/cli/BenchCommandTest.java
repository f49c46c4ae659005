package dev.airlock.cli;

import dev.airlock.oci.LeakCheck;
import dev.airlock.oci.OciDriverConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock bench --quick --json} as a user runs it: every case is there with a positive
 * median (the host MemAvailable drop excepted: with the few sandboxes of a quick run it is within
 * the noise of the rest of the host and may come out negative), and the tiers section has the rows
 * of every tier that works here and a note for every other. The figures themselves depend on the
 * host and are not checked.
 */
class BenchCommandTest {

    @AfterEach
    void nothingOfAnySandboxRemains() {
        assertThat(new LeakCheck(OciDriverConfig.defaults()).findOfEndedEngines()).isEmpty();
    }

    /** The fast lane's: the container and gVisor tiers (a microVM tier's guests boot under TCG here: a minute more). */
    @Test
    void quickJsonRunHasEveryCaseWithAPositiveMedian() throws Exception {
        quickJsonRun(List.of("container", "gvisor"));
    }

    /** The full lane's: every tier. */
    @Test
    @Tag("full")
    void quickJsonRunOfEveryTierHasEveryCaseWithAPositiveMedian() throws Exception {
        quickJsonRun(List.of("container", "gvisor", "microvm"));
    }

    private static void quickJsonRun(List<String> tiers) throws Exception {
        // each tier adds its own cold and warm runs (microVM boots under TCG among them): more than the two minutes of other commands
        CliProcess cli = CliProcess.run(Duration.ofMinutes(9), "bench", "--quick", "--json", "--tiers", String.join(",", tiers));
        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        JsonNode json = JsonMapper.builder().build().readTree(cli.stdout());

        assertThat(json.get("machine").asString()).contains("cores");
        assertThat(json.get("method").propertyNames()).containsExactly("latency", "tiers", "interpreter", "throughput", "memory", "egress",
                "snapshots", "cli", "tails");
        List<String> notes = new ArrayList<>();
        json.get("notes").forEach(n -> notes.add(n.asString()));
        List<String> working = workingTiers(json.get("tiers"), notes, tiers);
        // run from class directories, not the built jar: bin/airlock would rebuild the project first
        assertThat(notes).as("notes").anyMatch(n -> n.startsWith("cli: not measured: "));
        List<String> names = new ArrayList<>();
        for (JsonNode c : json.get("cases")) {
            String name = c.get("name").asString();
            names.add(name);
            if (working.stream().anyMatch(t -> name.startsWith(t + ": "))) {
                assertThat(c.get("section").asString()).as("section of %s", name).isEqualTo("tiers");
            }
            if (name.contains("MemAvailable drop")) {
                // The host-wide figure: a few idle sandboxes are within the noise of other processes, so any sign.
                assertThat(Double.isFinite(c.get("median").asDouble())).as("median of %s", name).isTrue();
            } else {
                assertThat(c.get("median").asDouble()).as("median of %s", name).isPositive();
            }
            assertThat(c.has("p10") && c.has("p90") && c.has("ratio")).as("fields of %s", name).isTrue();
            assertThat(c.get("unit").asString()).as("unit of %s", name).isNotEmpty();
        }
        assertThat(names).containsExactlyElementsOf(expectedCases(tiers, working, notes));

        // the tails: every case at 1 and 3 clients, none of whose requests failed
        List<String> tails = new ArrayList<>();
        for (JsonNode t : json.get("tails")) {
            String name = t.get("name").asString() + " @" + t.get("clients").asInt();
            tails.add(name);
            assertThat(t.get("failed").asInt()).as("failures of %s: %s", name, t.get("firstFailure")).isZero();
            assertThat(t.get("requests").asInt()).as("requests of %s", name).isGreaterThanOrEqualTo(3);
            assertThat(t.get("p50").asDouble()).as("p50 of %s", name).isPositive();
            assertThat(t.get("p95").asDouble()).as("p95 of %s", name).isGreaterThanOrEqualTo(t.get("p50").asDouble());
            assertThat(t.get("p99").asDouble()).as("p99 of %s", name).isGreaterThanOrEqualTo(t.get("p95").asDouble());
        }
        List<String> expectedTails = new ArrayList<>();
        for (int clients : new int[]{1, 3}) {
            for (String c : List.of("create from the warm pool (POST /v1/sandboxes)", "REST one-shot python3 -c pass (POST /v1/run)",
                    "time to first command (create, exec true)")) {
                expectedTails.add(c + " @" + clients);
            }
        }
        assertThat(tails).containsExactlyElementsOf(expectedTails);
    }

    /** {@code --density-only}, here on Airlock's own runtime: the idle sandboxes' section alone, its rates positive. */
    @Test
    void densityOnlyMeasuresTheIdleSandboxesAlone() throws Exception {
        CliProcess cli = CliProcess.run(Duration.ofMinutes(3), "bench", "--quick", "--json", "--density-only", "--max-sandboxes", "4",
                "--runtime", "airlock");
        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        JsonNode json = JsonMapper.builder().build().readTree(cli.stdout());
        assertThat(json.get("method").propertyNames()).containsExactly("memory");
        List<String> names = new ArrayList<>();
        for (JsonNode c : json.get("cases")) {
            names.add(c.get("name").asString());
            if (c.get("name").asString().contains("rate")) {
                assertThat(c.get("median").asDouble()).as("median of %s", c.get("name").asString()).isPositive();
            }
        }
        assertThat(names).contains("memory: 4 idle sandboxes: create rate, 4 at a time", "memory: 4 idle sandboxes: destroy rate, 4 at a time")
                .allMatch(n -> n.startsWith("memory: "));
        List<String> notes = new ArrayList<>();
        json.get("notes").forEach(n -> notes.add(n.asString()));
        assertThat(notes).contains("memory: leak check after destroying them all: clean");
    }

    @Test
    void unknownTierIsRefusedBeforeAnythingIsMeasured() throws Exception {
        CliProcess cli = CliProcess.run("bench", "--quick", "--tiers", "container,vm");
        assertThat(cli.exitCode()).isEqualTo(AirlockCli.EXIT_USAGE);
        assertThat(cli.stdout()).isEmpty();
        assertThat(cli.stderr()).contains("there is no tier 'vm'").contains("container, gvisor, microvm");
    }

    /**
     * The tiers the run measured: every tier is reported, in order; the container tier works (runc
     * is what the rest of the benchmark runs on), and so does gVisor where runsc is installed; a
     * tier that does not work has a note saying why.
     */
    private static List<String> workingTiers(JsonNode tiers, List<String> notes, List<String> asked) {
        List<String> all = new ArrayList<>();
        List<String> working = new ArrayList<>();
        for (JsonNode t : tiers) {
            String tier = t.get("tier").asString();
            all.add(tier);
            assertThat(t.get("driver").asString()).as("driver of tier %s", tier).isNotEmpty();
            if (t.get("works").asBoolean()) {
                working.add(tier);
            } else {
                assertThat(notes).as("notes").anyMatch(n -> n.startsWith("tiers: " + tier + " not measured: ")
                        && n.contains(t.get("detail").asString()));
            }
        }
        assertThat(all).containsExactlyElementsOf(asked);
        assertThat(working).contains("container");
        if (Files.isExecutable(Path.of("/usr/bin/runsc"))) {
            assertThat(working).as("tiers working with runsc installed").contains("gvisor");
        }
        return working;
    }

    private static List<String> expectedCases(List<String> asked, List<String> workingTiers, List<String> notes) {
        List<String> cases = new ArrayList<>(List.of("bare: python3 -c pass", "bare: python3 -c pass, p99", "bare: true"));
        if (Files.isExecutable(Path.of("/usr/bin/bwrap"))) {
            cases.add("bubblewrap: python3 -c pass");
        }
        cases.addAll(List.of("runc run (same bundle, cold): python3 -c pass",
                "airlock one-shot, warm pool: python pass",
                "airlock one-shot, warm pool: python pass, p99",
                "airlock exec into a sandbox: python3 -c pass",
                "airlock exec into a sandbox: true",
                "airlock create from warm pool",
                "server: GET /health round trip (the floor of a REST case)",
                "server: GET /health through the JDK's HttpClient",
                "server: create from warm pool (POST /v1/sandboxes)",
                "server: exec true (POST .../exec)",
                "server: exec python3 -c pass",
                "server: one-shot python3 -c pass (create, exec, delete)",
                "server: time to first command over REST (create, exec true, delete)",
                "server: time to first command through the E2B door (create, process Start true, kill)",
                "airlock one-shot, cold: python pass"));
        for (String tier : workingTiers) {
            cases.add(tier + ": one-shot, cold (no pool): python pass");
            cases.add(tier + ": one-shot, warm pool: python pass");
            cases.add(tier + ": exec true into a running sandbox");
            String memory = tier + ": idle memory per sandbox (memory cgroup), MiB";
            // a driver whose sandboxes have no memory cgroup of their own says so in a note instead
            if (tier.equals("container") || tier.equals("gvisor") || notes.stream().noneMatch(n -> n.startsWith("tiers: " + memory))) {
                cases.add(memory);
            }
        }
        // the interpreter rows, in the system image: the host's /usr needs python3-ipykernel (bin/test installs it)
        if (notes.stream().noneMatch(n -> n.startsWith("interpreter: not measured: image system lacks"))) {
            cases.addAll(List.of("one-shot: python3 -c 'import ipykernel, jupyter_client'", "context create (kernel ready)",
                    "one-shot: python3 -c '1+1'", "cell 1+1 in a live context", "one-shot: python3 -c '<plot, savefig png>'",
                    "cell: a small matplotlib plot, PNG back"));
        }
        for (int p : new int[]{1, 2, 4, 8}) {
            cases.add("bare: python3 -c pass, " + p + " parallel");
            cases.add("airlock one-shot, warm pool " + p + ": python pass, " + p + " parallel");
        }
        cases.add("memory: runc run + delete of true, one at a time (baseline)");
        for (int n : new int[]{10, 50}) {
            cases.add("memory: " + n + " idle sandboxes: memory cgroup usage per sandbox");
            cases.add("memory: " + n + " idle sandboxes: host MemAvailable drop per sandbox");
            cases.add("memory: " + n + " idle sandboxes: create rate, 4 at a time");
            cases.add("memory: " + n + " idle sandboxes: destroy rate, 4 at a time");
        }
        cases.add("egress: 100 MB download, direct (Java client)");
        cases.add("egress: 100 MB download through EgressProxy (Java client)");
        if (Files.isExecutable(Path.of("/usr/bin/curl"))) {
            cases.add("egress: 100 MB download, curl on the host");
            cases.add("egress: 100 MB download, curl in a sandbox (agent + proxy)");
        }
        cases.add("host: copy 1 MiB (baseline)");
        cases.add("snapshot of 1 MiB in /workspace");
        cases.add("restore 1 MiB (fork of 1)");
        cases.add("create 3 empty sandboxes (baseline)");
        cases.add("fork 3 of 1 MiB");
        cases.add("fork 3 of 8 MiB, files copied (baseline)");
        cases.add("fork 3 of 8 MiB, files shared copy-on-write");
        // a tier's memory snapshots only where --tiers has it: the fast lane's run leaves the microVM's out
        if (asked.contains("gvisor") && Files.isExecutable(Path.of("/usr/bin/runsc"))) { // else a note says the memory cases need it
            cases.add("gVisor: host: copy 8 MiB (baseline)");
            cases.add("gVisor: memory snapshot of a process holding 8 MiB");
            cases.add("gVisor: cold create + fill 8 MiB (baseline)");
            cases.add("gVisor: fork of 1 from the memory snapshot (restore)");
            cases.add("gVisor: 3 cold creates + fill 8 MiB (baseline)");
            cases.add("gVisor: fork of 3 from the memory snapshot");
        }
        // else a note says what the microVM memory cases need
        if (!asked.contains("microvm")) {
            assertThat(notes).contains("snapshots: the microVM's memory snapshots not measured: --tiers leaves microvm out");
        } else if (Files.isRegularFile(Path.of("/bin/busybox")) && Files.isExecutable(Path.of("/usr/bin/qemu-system-x86_64"))
                && Files.isExecutable(Path.of("/usr/bin/mksquashfs"))) {
            cases.add("microVM: host: copy 200 MiB, a guest's RAM (baseline)");
            cases.add("microVM: memory snapshot of a guest of 200 MiB RAM holding 8 MiB");
            cases.add("microVM: cold create + fill 8 MiB (baseline)");
            cases.add("microVM: fork of 1 from the memory snapshot (restore)");
            cases.add("microVM: 2 cold creates + fill 8 MiB (baseline)");
            cases.add("microVM: fork of 2 from the memory snapshot");
            cases.add("microVM: host memory of 2 cold guests holding 8 MiB each (baseline)");
            cases.add("microVM: host memory of 2 forks of the memory snapshot");
            cases.add("microVM: warm pool refill, 2 guests each booted (baseline)");
            cases.add("microVM: warm pool refill, 2 guests restored from the pool's booted guest");
        }
        return cases;
    }
}
