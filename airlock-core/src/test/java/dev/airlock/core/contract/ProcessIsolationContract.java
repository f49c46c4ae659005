package dev.airlock.core.contract;

import dev.airlock.core.EndReason;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.OutputListener;
import dev.airlock.core.RunResult;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static dev.airlock.core.contract.Hostile.py;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The sandbox's own pid namespace: it sees only its processes, its agent (PID 1) cannot be
 * killed or inspected from inside, and nothing it starts survives the sandbox. An execution that
 * is killed or times out takes everything it started with it, whatever session it moved to; one
 * that exits leaves its background processes running. No state carries from one sandbox to the next.
 */
public abstract class ProcessIsolationContract extends ContractTestBase {

    protected ProcessIsolationContract(DriverContract driver) {
        super(driver);
    }

    @Test
    void onlyTheSandboxsOwnProcessesAreVisible() {
        long hostPid = ProcessHandle.current().pid();
        ExecResult r = ok(python("""
                import os
                pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
                own = {1, os.getppid(), os.getpid()}
                spares = [p for p in pids if p not in own and open(f"/proc/{p}/comm").read().strip() == "airlock-agent"
                          and open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1] == "1"]
                print(sorted(own | set(spares)) == pids and len(spares) == %d, pids, os.getpid())
                print(repr(open("/proc/1/cmdline").read()))
                print(open(f"/proc/{os.getppid()}/stat").read().rsplit(")", 1)[1].split()[1])
                print(os.path.exists("/proc/%d"))
                """.formatted(driver.spareSupervisors(), hostPid)));
        String[] lines = r.stdoutText().split("\n");
        assertThat(lines[0]).as("numeric /proc entries: only the agent, its %d spare supervisor(s) (children of the agent), the"
                + " execution's supervisor and the program itself", driver.spareSupervisors()).startsWith("True ");
        assertThat(lines[1]).isEqualTo("'" + driver.agentCommandLine(Limits.DEFAULTS).replace("\0", "\\x00") + "'");
        assertThat(lines[2]).as("the program's parent (its supervisor) is the agent's child").isEqualTo("1");
        assertThat(lines[3]).as("the host JVM's pid %s", hostPid).isEqualTo("False");
    }

    /**
     * ps, too, lists only the agent, its spare supervisors and the execution's supervisor (forks of
     * the agent), the shell and ps itself.
     */
    @Test
    void psShowsNoHostProcesses() {
        ExecResult r = ok(sh("ps -e -o pid=,user=,comm= > /tmp/ps.txt; cat /tmp/ps.txt"));
        assertThat(r.stdoutText().lines().map(l -> l.trim().replaceAll("^\\d+\\s+", "").replaceAll("\\s+", " ")).toList())
                .as(r.stdoutText())
                .containsExactlyElementsOf(psLines());
        assertThat(r.stdoutText().trim()).startsWith("1 ");
    }

    /** What {@link #psShowsNoHostProcesses} expects, in pid order: the forks of the agent come first. */
    private List<String> psLines() {
        List<String> lines = new ArrayList<>(Collections.nCopies(2 + driver.spareSupervisors(), "sandbox airlock-agent"));
        lines.addAll(List.of("sandbox sh", "sandbox ps"));
        return lines;
    }

    /**
     * The agent is PID 1 of the sandbox's pid namespace and shares its uid with the code: every
     * signal the code sends it is dropped by the kernel, so the sandbox keeps working. The code also
     * signals every other process it can see (a background process of an earlier execution and its
     * supervisor) but its own supervisor, whose SIGKILL ends the code's own execution by design. A
     * line printed after the attack arrives, and the sandbox runs the next command.
     *
     * <p>gVisor's Sentry does not protect a sandbox's init from its own processes' signals: the
     * first one, SIGKILL, kills the agent and the sandbox ends. What must hold there is that the
     * execution says so ({@code AGENT_KILLED}, not a client's {@code CANCELLED}) and keeps the line
     * printed before the attack; only the sandbox the code runs in ends.
     */
    @Test
    @Tag("smoke")
    void agentSurvivesEverySignalFromInside() {
        try (Sandbox sandbox = engine.create(spec())) {
            ok(sandbox.exec(ExecRequest.of("sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 & echo started")));
            ExecResult attack = sandbox.exec(ExecRequest.of("python3", "-c", """
                    import os, signal, time
                    print("attacking", flush=True)
                    time.sleep(0.3)   # the line is on the host before the attack, whatever the tier makes of it
                    others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid(), os.getppid())]
                    sent = []
                    for s in [signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT,
                              signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
                              signal.SIGPIPE, signal.SIGCHLD, signal.SIGTRAP, signal.SIGSYS]:
                        os.kill(1, s)
                        sent.append(s.name)
                    for pid in others:
                        for s in [signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP, signal.SIGSEGV]:
                            try:
                                os.kill(pid, s)
                            except ProcessLookupError:
                                pass
                    time.sleep(0.2)
                    state = [l for l in open("/proc/1/status") if l.startswith("State:")][0].split()[1]
                    print(len(sent), "signals sent to PID 1 and", len(others), "other processes signalled; agent state", state)
                    """));
            if (gvisor()) {
                assertThat(attack.endReason()).as(attack.toString()).isEqualTo(EndReason.AGENT_KILLED);
                assertThat(attack.stdoutText()).as("the output before the attack is kept").isEqualTo("attacking\n");
                assertThat(attack.message()).contains("agent (PID 1)");
                assertThatThrownBy(() -> sandbox.exec(ExecRequest.of("true"))).as("the sandbox ended with its agent").isNotNull();
                return;
            }
            ok(attack);
            assertThat(attack.stdoutText()).matches("attacking\n16 signals sent to PID 1 and [1-9]\\d* other processes signalled; agent state S\n");
            ExecResult after = ok(sandbox.exec(ExecRequest.of("echo", "still served")));
            assertThat(after.stdoutText()).isEqualTo("still served\n");
        }
    }

    /**
     * A background process a one-shot run leaves behind (nohup, its own session, stdio closed)
     * dies with the run's sandbox. It is seen on the host while the run lives, so its absence
     * afterwards is meaningful.
     */
    @Test
    void backgroundProcessDoesNotOutliveItsOneShotRun() throws Exception {
        String marker = "1001." + (System.nanoTime() % 1_000_000);
        if (!sandboxProcessesAreHostProcesses()) {
            // Under gVisor a sandbox process is a task of the Sentry, in a guest a process of the guest's
            // kernel, never a host process: the escaped sleep is not on the host while the run lives, and
            // once the run is over its sandbox's host processes (the Sentry, which holds every task, and
            // the gofer; the guest's VMM) are gone.
            CompletableFuture<RunResult> run = CompletableFuture.supplyAsync(() -> engine.run(request(Language.SH, """
                    nohup setsid sleep %s </dev/null >/dev/null 2>&1 &
                    echo started
                    sleep 2
                    """.formatted(marker))));
            while (!run.isDone()) {
                assertThat(Hostile.hostProcessesWith("sleep " + marker)).as("sandbox processes on the host").isEmpty();
                Thread.sleep(100);
            }
            RunResult done = run.get(30, TimeUnit.SECONDS);
            assertThat(ok(done.result()).stdoutText()).isEqualTo("started\n");
            assertThat(driver.leftovers(done.sandboxId().value())).as("the run's sandbox, Sentry (or VMM) and all").isEmpty();
            return;
        }
        CompletableFuture<ExecResult> run = CompletableFuture.supplyAsync(() -> engine.run(request(Language.SH, """
                nohup setsid sleep %s </dev/null >/dev/null 2>&1 &
                echo started
                sleep 2
                """.formatted(marker))).result());
        assertThat(Hostile.eventually(10_000, () -> Hostile.hostProcessesWith("sleep " + marker).stream().anyMatch(p -> !p.state().equals("Z"))))
                .as("the escaped sleep is seen on the host while the run lives").isTrue();
        assertThat(Hostile.hostProcessesWith("sleep " + marker))
                .as("and it runs as the sandbox's unprivileged host uid")
                .allSatisfy(p -> assertThat(driver.isSandboxHostUid(p.uid(), 1000)).as("host uid %d", p.uid()).isTrue());
        ExecResult r = ok(run.get(30, TimeUnit.SECONDS));
        assertThat(r.stdoutText()).isEqualTo("started\n");
        assertThat(Hostile.eventually(15_000, () -> Hostile.hostProcessesWith("sleep " + marker).isEmpty()))
                .as("no process of the run remains on the host: %s", Hostile.hostProcessesWith("sleep " + marker)).isTrue();
    }

    /** In a persistent sandbox a daemonized process lives on between executions, and dies when it is closed. */
    @Test
    void daemonOfAPersistentSandboxDiesWhenTheSandboxIsClosed() {
        String marker = "1002." + (System.nanoTime() % 1_000_000);
        if (!sandboxProcessesAreHostProcesses()) {
            // Under gVisor the daemon is a task of the Sentry, in a guest a process of the guest's
            // kernel, not a host process: it is seen inside, between executions, and after the close
            // the sandbox's Sentry (or VMM), which holds it, is gone.
            String id;
            try (Sandbox sandbox = engine.create(spec())) {
                id = sandbox.id().value();
                ok(sandbox.exec(ExecRequest.of("sh", "-c", "nohup setsid sleep " + marker + " </dev/null >/dev/null 2>&1 &")));
                ExecResult seen = ok(sandbox.exec(ExecRequest.of("python3", "-c",
                        "import os; print(sum(open(f'/proc/{p}/cmdline').read().split('\\0')[:2] == ['sleep', '%s'] for p in os.listdir('/proc') if p.isdigit()))"
                                .formatted(marker))));
                assertThat(seen.stdoutText()).as("the daemon lives on in the sandbox").isEqualTo("1\n");
                assertThat(Hostile.hostProcessesWith("sleep " + marker)).as("and is no host process").isEmpty();
            }
            assertThat(driver.leftovers(id)).as("the closed sandbox, Sentry (or VMM) and all").isEmpty();
            return;
        }
        try (Sandbox sandbox = engine.create(spec())) {
            ok(sandbox.exec(ExecRequest.of("sh", "-c", "nohup setsid sleep " + marker + " </dev/null >/dev/null 2>&1 &")));
            assertThat(Hostile.eventually(5_000, () -> !Hostile.hostProcessesWith("sleep " + marker).isEmpty()))
                    .as("the daemon runs on the host").isTrue();
            assertThat(Hostile.hostProcessesWith("sleep " + marker))
                    .allSatisfy(p -> assertThat(driver.isSandboxHostUid(p.uid(), 1000)).as("host uid of the daemon: %d", p.uid()).isTrue());
        }
        assertThat(Hostile.eventually(15_000, () -> Hostile.hostProcessesWith("sleep " + marker).isEmpty()))
                .as("no process of the closed sandbox remains: %s", Hostile.hostProcessesWith("sleep " + marker)).isTrue();
    }

    /**
     * Starts a setsid'd process and a daemon double-forked into a session of its own, both outside
     * the execution's process group, waits until both run, says so, and sleeps.
     */
    private static String escapes(String marker) {
        return """
                setsid sh -c 'exec sleep %s1' </dev/null >/dev/null 2>&1 &
                (setsid sh -c 'sleep %s2 & echo $! > /tmp/%s.pid; wait' </dev/null >/dev/null 2>&1 &)
                while [ ! -s /tmp/%s.pid ]; do sleep 0.05; done
                kill -0 $! && kill -0 "$(cat /tmp/%s.pid)" && echo started
                sleep 1000
                """.formatted(marker, marker, marker, marker, marker);
    }

    /**
     * How many processes run {@code sleep <marker><n>} for n = 1, 2, 3, seen inside the sandbox by a
     * second execution that scans its /proc (the same under any kernel; the probe's own command line
     * does not match).
     */
    private static String sleepersInside(Sandbox sandbox, String marker) {
        return ok(sandbox.exec(ExecRequest.of("python3", "-c", """
                import os
                def count(m):
                    n = 0
                    for p in os.listdir("/proc"):
                        try:
                            n += p.isdigit() and open(f"/proc/{p}/cmdline").read().split("\\0")[:2] == ["sleep", m]
                        except OSError:
                            pass
                    return n
                print(*[count("%s" + str(i)) for i in (1, 2, 3)])
                """.formatted(marker)))).stdoutText();
    }

    /**
     * The timeout of an execution kills everything it started: a setsid'd process and a
     * double-forked daemon in its own session too, not only its process group. The sandbox lives
     * on, so nothing else would end them. The timeout is scaled by the tier's speed: the escapes
     * must have started before it (a guest under TCG on a loaded host took longer than 2 s).
     */
    @Test
    void timeoutKillsEverythingTheExecutionStartedWhateverItsSession() {
        String marker = "1004" + (System.nanoTime() % 1_000_000) + ".";
        try (Sandbox sandbox = engine.create(spec())) {
            ExecResult r = sandbox.exec(ExecRequest.of("sh", "-c", escapes(marker)).withTimeout(scaled(Duration.ofSeconds(2))));

            assertThat(r.endReason()).as(r.toString()).isEqualTo(EndReason.TIMED_OUT);
            assertThat(r.stdoutText()).as("both escapes ran before the timeout").isEqualTo("started\n");
            assertThat(sleepersInside(sandbox, marker)).as("the escapes after the timeout").isEqualTo("0 0 0\n");
        }
    }

    /** The same for an execution that is killed (SIGKILL to it) before its timeout. */
    @Test
    @Tag("smoke")
    void killKillsEverythingTheExecutionStartedWhateverItsSession() throws Exception {
        String marker = "1005" + (System.nanoTime() % 1_000_000) + ".";
        try (Sandbox sandbox = engine.create(spec())) {
            CountDownLatch started = new CountDownLatch(1);
            Execution execution = sandbox.start(ExecRequest.of("sh", "-c", escapes(marker)), new OutputListener() {
                @Override
                public void stdout(byte[] chunk) {
                    started.countDown();
                }
            });
            assertThat(started.await(30, TimeUnit.SECONDS)).as("both escapes started").isTrue();
            assertThat(sleepersInside(sandbox, marker)).as("the escapes while the execution runs").isEqualTo("1 1 0\n");

            execution.signal(9);
            ExecResult r = execution.await();

            assertThat(r.endReason()).as(r.toString()).isEqualTo(EndReason.SIGNALED);
            assertThat(r.exitCode()).isEqualTo(137);
            assertThat(sleepersInside(sandbox, marker)).as("the escapes after the kill").isEqualTo("0 0 0\n");
        }
    }

    /** An execution that exits on its own leaves what it started in the background running: sessions rely on `cmd &`. */
    @Test
    void normalExitLeavesBackgroundProcessesRunning() {
        String marker = "1006" + (System.nanoTime() % 1_000_000) + ".";
        try (Sandbox sandbox = engine.create(spec())) {
            ExecResult r = ok(sandbox.exec(ExecRequest.of("sh", "-c",
                    "sleep %s3 </dev/null >/dev/null 2>&1 & setsid sleep %s1 </dev/null >/dev/null 2>&1 & echo done".formatted(marker, marker))));

            assertThat(r.stdoutText()).isEqualTo("done\n");
            assertThat(sleepersInside(sandbox, marker)).as("the background processes after the execution exited").isEqualTo("1 0 1\n");
        }
    }

    @Test
    void filesOfOneRunAreAbsentInTheNext() {
        String name = Hostile.token("leftover");
        ExecResult first = ok(python(py("""
                for d in ["/tmp", "/workspace", "/dev/shm"]:
                    write_to(os.path.join(d, "%s"))
                    print(d, os.path.exists(os.path.join(d, "%s")))
                """.formatted(name, name))));
        assertThat(first.stdoutText()).isEqualTo("/tmp True\n/workspace True\n/dev/shm True\n");
        ExecResult second = ok(python(py("""
                for d in ["/tmp", "/workspace", "/dev/shm"]:
                    print(d, os.path.exists(os.path.join(d, "%s")), sorted(os.listdir(d)))
                """.formatted(name))));
        assertThat(second.stdoutText()).isEqualTo("/tmp False ['airlock']\n/workspace False []\n/dev/shm False []\n");
    }

    /** The agent's control socket never reaches the program: no inherited descriptor is a socket. */
    @Test
    void programInheritsNoSocketOfTheAgent() {
        ExecResult r = ok(python("""
                import os, stat
                socks = []
                for fd in range(3, 1024):
                    try:
                        st = os.fstat(fd)
                    except OSError:
                        continue
                    if stat.S_ISSOCK(st.st_mode):
                        socks.append((fd, os.readlink(f"/proc/self/fd/{fd}")))
                print("sockets", socks)
                """));
        assertThat(r.stdoutText()).isEqualTo("sockets []\n");
    }

    @Test
    void programStartsWithOnlyStdio() {
        ExecResult r = ok(python("""
                import os
                extra = []
                for fd in range(3, 1024):
                    try:
                        os.fstat(fd)
                        extra.append((fd, os.readlink(f"/proc/self/fd/{fd}")))
                    except OSError:
                        pass
                print("inherited", extra)
                """));
        assertThat(r.stdoutText()).isEqualTo("inherited []\n");
    }

    @Test
    void hostnameIsTheSandboxsOwn() {
        ExecResult r = ok(python(py("""
                import socket
                print(socket.gethostname(), os.uname().nodename)
                attempt("sethostname", lambda: print(sc(170, 0, 0)))
                """)));
        assertThat(r.stdoutText()).isEqualTo("sandbox sandbox\nresult=-1 errno=1\nsethostname: ok\n");
    }
}
