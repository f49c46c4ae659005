package dev.airlock.oci;

import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxId;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Every execution of a long-lived sandbox runs in its own cgroup, so a timeout or a kill ends
 * everything it started, including what left its process group and session (setsid, a double
 * fork): nothing keeps running in the sandbox afterwards, seen from the host and from inside.
 * Beside the agent, a spare supervisor always waits in its own execution cgroup (CgroupedAgent).
 */
class ExecutionCgroupTest extends SandboxTestBase {

    /** What is left in a sandbox when nothing runs: the agent and its spare supervisor. */
    private static final int IDLE = 2;

    /**
     * Starts, and then outlives, three escapes from the execution's process group: a setsid'd
     * shell, a double-forked daemon in its own session, and a plain background child; then waits.
     */
    private static final String ESCAPES = """
            import os, subprocess, time
            subprocess.Popen(["setsid", "sh", "-c", "sleep 1000"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    for fd in (0, 1, 2):
                        os.dup2(os.open("/dev/null", os.O_RDWR), fd)
                    time.sleep(1000)
                os._exit(0)
            subprocess.Popen(["sleep", "1001"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print("escaped", flush=True)
            time.sleep(1000)
            """;

    @BeforeAll
    static void needsCgroupV2() {
        assumeThat(Cgroups.v2Root()).as("a cgroup v2 hierarchy (pure or hybrid) for per-execution cgroups").isNotNull();
    }

    @Test
    void setsidAndDoubleForkedProcessesDieWithTheirExecutionsTimeout() {
        try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
            sb.writeFile("/tmp/escape.py", ESCAPES.getBytes(StandardCharsets.UTF_8));
            Execution execution = sb.start(ExecRequest.of("python3", "/tmp/escape.py").withTimeout(Duration.ofSeconds(3)), OutputListener.NONE);
            // The test could fail: before the timeout, the escapes are running (agent, supervisor, python, 3 sleeps at least).
            awaitProcessCount(sb, n -> n >= IDLE + 5, "the execution's escapes started");

            ExecResult r = execution.await();

            assertThat(r.endReason()).as(r.stdoutText()).isEqualTo(EndReason.TIMED_OUT);
            assertThat(r.stdoutText()).isEqualTo("escaped\n");
            assertOnlyTheAgentIsLeft(sb);
        }
    }

    @Test
    void setsidAndDoubleForkedProcessesDieWhenTheirExecutionIsKilled() {
        try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
            sb.writeFile("/tmp/escape.py", ESCAPES.getBytes(StandardCharsets.UTF_8));
            Execution execution = sb.start(ExecRequest.of("python3", "/tmp/escape.py").withTimeout(Duration.ofMinutes(5)), OutputListener.NONE);
            awaitProcessCount(sb, n -> n >= IDLE + 5, "the execution's escapes started");

            execution.signal(9);
            ExecResult r = execution.await();

            assertThat(r.endReason()).isEqualTo(EndReason.SIGNALED);
            assertOnlyTheAgentIsLeft(sb);
        }
    }

    /** The other executions of the sandbox, and what they left, are not touched by one's timeout. */
    @Test
    void aTimeoutKillsOnlyItsOwnExecutionsProcesses() {
        try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
            ok(exec(sb, "sh", "-c", "setsid sleep 2000 </dev/null >/dev/null 2>&1 &"));
            Execution other = sb.start(ExecRequest.of("sleep", "3000").withTimeout(Duration.ofMinutes(5)), OutputListener.NONE);
            sb.writeFile("/tmp/escape.py", ESCAPES.getBytes(StandardCharsets.UTF_8));
            ExecResult r = sb.exec(ExecRequest.of("python3", "/tmp/escape.py").withTimeout(Duration.ofSeconds(2)));
            assertThat(r.endReason()).isEqualTo(EndReason.TIMED_OUT);

            awaitProcessCount(sb, n -> n == IDLE + 4, "the agent, its spare, the daemon of the first execution and the running sleep, each of these under its execution's supervisor");
            assertThat(ok(exec(sb, "ps", "-e", "-o", "args=")).stdoutText())
                    .contains("sleep 2000", "sleep 3000").doesNotContain("sleep 1000", "sleep 1001");
            other.signal(9);
            assertThat(other.await().endReason()).isEqualTo(EndReason.SIGNALED);
        }
    }

    /**
     * Code cannot leave its execution's cgroup: the sandbox has no cgroup filesystem and may not
     * mount one, so a daemon cannot slip out before the timeout comes.
     */
    @Test
    void executionCannotLeaveItsCgroup() {
        try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
            String out = ok(python(sb, """
                    import ctypes, errno, os
                    libc = ctypes.CDLL(None, use_errno=True)
                    print(open("/proc/self/cgroup").read().strip().splitlines()[-1])
                    print(os.path.exists("/sys/fs/cgroup"))
                    os.makedirs("/tmp/cg", exist_ok=True)
                    for fs in (b"cgroup2", b"cgroup"):
                        r = libc.mount(fs, b"/tmp/cg", fs, 0, None)
                        print(fs.decode(), "mounted" if r == 0 else errno.errorcode[ctypes.get_errno()])
                    """)).stdoutText();
            assertThat(out.lines().toList()).as(out).hasSize(4);
            assertThat(out.lines().toList().getFirst()).as("its own cgroup, below the sandbox's").matches("0::/" + ExecCgroups.PREFIX + "\\d+");
            assertThat(out.lines().skip(1).toList()).containsExactly("False", "cgroup2 EPERM", "cgroup EPERM");
        }
    }

    /**
     * The cgroup of an execution that exited while a daemon it started still runs is kept (the
     * daemon is the sandbox's to keep), and removed at the next execution once the daemon is gone:
     * ended executions leave no cgroups behind.
     */
    @Test
    void cgroupsOfEndedExecutionsAreRemovedOnceEmpty() throws IOException {
        try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
            ok(exec(sb, "sh", "-c", "setsid sleep 2000 </dev/null >/dev/null 2>&1 &"));
            awaitExecCgroups(sb, 2, "the daemon's execution cgroup and the spare's");
            ok(exec(sb, "pkill", "-f", "sleep 2000"));
            awaitProcessCount(sb, n -> n == IDLE, "the daemon is gone");
            ok(exec(sb, "true"));
            awaitExecCgroups(sb, 1, "after every execution ended, the spare's alone");
        }
    }

    /**
     * Placing a held execution in its cgroup finds it in the agent's list of children, which the
     * kernel can read short while other children exit (issue 37: a background start failed with
     * "not a child of the agent"). Here each start races with the end of the execution killed just
     * before it; a thousand in a row must all start, and nothing may be left after.
     */
    @Test
    void backgroundStartsAmidKillsOfEarlierOnesAllStart() {
        try (Sandbox sb = engine.create(SandboxSpec.defaults())) {
            List<Execution> running = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                // every other one ends by itself at once, the rest are killed: either way their ends race with the next starts
                running.add(sb.start(ExecRequest.of(i % 2 == 0 ? "true" : "sleep", "1000").withTimeout(Duration.ofMinutes(5)), OutputListener.NONE));
                if (running.size() > 8) {
                    Execution earliest = running.removeFirst();
                    earliest.signal(9);
                    assertThat(earliest.await().endReason()).isIn(EndReason.EXITED, EndReason.SIGNALED);
                }
            }
            running.forEach(e -> e.signal(9));
            for (Execution e : running) {
                assertThat(e.await().endReason()).isIn(EndReason.EXITED, EndReason.SIGNALED);
            }
            awaitProcessCount(sb, n -> n == IDLE, "every execution is gone");
            assertOnlyTheAgentIsLeft(sb);
        }
    }

    /**
     * Hosts with cgroup v1 alone get the freezer variant: the execution's freezer cgroup is frozen,
     * everything in it killed, then thawed. Tried here on the v1 freezer beside this host's v2.
     */
    @Test
    void setsidAndDoubleForkedProcessesDieWithTheV1FreezerToo() throws Exception {
        OciDriver driver = (OciDriver) engine.driver();
        OciSandbox sandbox = (OciSandbox) driver.create(SandboxId.random(driver.instance()), SandboxSpec.defaults());
        try {
            ExecCgroups freezer = ExecCgroups.withFreezer(sandbox.id().value(), sandbox.execCgroups().agentHostPid());
            assumeThat(freezer).as("the v1 freezer hierarchy").isNotNull();
            sandbox.agent().writeFile("/tmp/escape.py", ESCAPES.getBytes(StandardCharsets.UTF_8), 0644);
            Path[] cgroup = new Path[1];
            SandboxAgent.AgentProcess process = sandbox.agentClient().start(ExecRequest.of("python3", "/tmp/escape.py")
                    .withEnv(Map.of("PATH", "/usr/bin:/bin")), OutputListener.NONE, pid -> cgroup[0] = freezer.place(pid));
            Path procs = cgroup[0].resolve("cgroup.procs");
            awaitLines(procs, n -> n >= 5, "the supervisor, python and its three escapes in the execution's freezer cgroup");

            assertThat(freezer.kill(cgroup[0])).isTrue();

            assertThat(process.await(Duration.ofSeconds(10))).isEqualTo(new SandboxAgent.ProcessExit(137, 9, null));
            awaitLines(procs, n -> n == 0, "nothing left in the execution's freezer cgroup");
            assertThat(Files.readString(cgroup[0].resolve("freezer.state")).trim()).as("thawed again").isEqualTo("THAWED");
            Path sandboxFreezer = cgroup[0].getParent();
            assertThat(commands(Files.readAllLines(sandboxFreezer.resolve("cgroup.procs")).stream().map(Long::parseLong).toList()))
                    .as("the sandbox's freezer cgroup: the agent alone (a sandbox not pooled makes its spare at its first"
                            + " execution through CgroupedAgent, and this one's went to the agent directly)")
                    .containsExactly("airlock-agent");
            freezer.release(cgroup[0]);
            freezer.sweep();
            assertThat(freezer.lingering()).isZero();
            assertThat(cgroup[0]).doesNotExist();
        } finally {
            sandbox.destroy();
        }
    }

    private static void awaitLines(Path file, Predicate<Integer> condition, String what) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        List<String> lines = Files.readAllLines(file);
        while (!condition.test(lines.size()) && System.nanoTime() < deadline) {
            Thread.sleep(50);
            lines = Files.readAllLines(file);
        }
        assertThat(lines.size()).as("%s: %s", what, lines).matches(condition::test);
    }

    private static Path sandboxCgroup(Sandbox sb) {
        return Cgroups.v2Root().resolve(Cgroups.PARENT).resolve(sb.id().value());
    }

    private static List<Path> execCgroups(Sandbox sb) throws IOException {
        try (Stream<Path> children = Files.list(sandboxCgroup(sb))) {
            return children.filter(Files::isDirectory).toList();
        }
    }

    /**
     * Host pids of every process in the sandbox's cgroup and the cgroups below it (which a sweeper
     * may remove meanwhile: the tree is walked again then).
     */
    private static List<Long> processesOf(Sandbox sb) {
        for (int attempt = 1; ; attempt++) {
            List<Long> pids = new ArrayList<>();
            try (Stream<Path> tree = Files.walk(sandboxCgroup(sb))) {
                for (Path procs : tree.filter(p -> p.getFileName().toString().equals("cgroup.procs")).toList()) {
                    try {
                        Files.readAllLines(procs).stream().filter(l -> !l.isBlank()).map(Long::parseLong).forEach(pids::add);
                    } catch (IOException removed) {
                        // an execution's cgroup removed while we walked
                    }
                }
                return pids;
            } catch (IOException | java.io.UncheckedIOException e) {
                if (attempt == 10) {
                    throw new IllegalStateException(e);
                }
            }
        }
    }

    @Test
    void aSandboxLeftIdleHasNoSpareAndAPooledOneHasItsSpareBeforeItsRun() throws Exception {
        try (Sandbox idle = engine.create(SandboxSpec.defaults())) {
            Thread.sleep(500);   // a spare asked for at creation would be forked and placed by now (milliseconds)
            assertThat(commands(processesOf(idle))).as("a sandbox not pooled, before its first execution: its agent alone")
                    .containsExactly("airlock-agent");
            ok(exec(idle, "true"));
            awaitProcessCount(idle, n -> n == IDLE, "after its first execution: the agent and the spare it made");
        }
        try (Engine pooled = new Engine(new OciDriver(CONFIG), 1, SandboxSpec.defaults());
             Sandbox taken = awaitPooled(pooled)) {
            awaitProcessCount(taken, n -> n == IDLE, "a pooled sandbox, before its run: the agent and its spare");
        }
    }

    /** A sandbox of {@code pooled}'s warm pool, once the pool has one. */
    private static Sandbox awaitPooled(Engine pooled) throws IOException {
        awaitUntil(() -> pooled.warmPoolReady() > 0);
        return pooled.create(SandboxSpec.defaults());
    }

    private static void awaitProcessCount(Sandbox sb, Predicate<Integer> condition, String what) {
        try {
            awaitUntil(() -> condition.test(processesOf(sb).size()));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        List<Long> pids = processesOf(sb);
        assertThat(pids.size()).as("%s: processes in the sandbox's cgroup: %s", what, commands(pids)).matches(condition::test);
    }

    /**
     * From the host and from inside: the agent and its spare alone are left in the sandbox, and it
     * still serves (inside, ps sees itself and its own execution's supervisor, a fork of the agent,
     * too).
     */
    private static void assertOnlyTheAgentIsLeft(Sandbox sb) {
        awaitProcessCount(sb, n -> n == IDLE, "only the agent and its spare are left");
        assertThat(commands(processesOf(sb))).containsExactly("airlock-agent", "airlock-agent");
        assertThat(ok(exec(sb, "ps", "-e", "-o", "comm=")).stdoutText().lines().map(String::strip).toList())
                .as("processes seen from inside").containsExactly("airlock-agent", "airlock-agent", "airlock-agent", "ps");
    }

    /** Waits for the sandbox to have {@code count} execution cgroups (a spare is placed in the background). */
    private static void awaitExecCgroups(Sandbox sb, int count, String what) throws IOException {
        awaitUntil(() -> execCgroups(sb).size() == count);
        assertThat(execCgroups(sb)).as(what).hasSize(count);
    }

    /** Polls {@code done} every 50 ms for at most 20 s; the caller asserts what it waited for. */
    private static void awaitUntil(Check done) throws IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!done.holds() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    @FunctionalInterface
    private interface Check {
        boolean holds() throws IOException;
    }

    private static List<String> commands(List<Long> pids) {
        return pids.stream().map(pid -> {
            try {
                return Files.readString(Path.of("/proc", pid.toString(), "comm")).strip();
            } catch (IOException gone) {
                return "(exited " + pid + ")";
            }
        }).toList();
    }
}
