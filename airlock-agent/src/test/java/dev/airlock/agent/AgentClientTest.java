package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.TerminalSize;
import dev.airlock.core.SandboxAgent.AgentProcess;
import dev.airlock.core.SandboxAgent.ProcessExit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Runs the real agent binary on the host, as an ordinary child process of the test. */
@Timeout(120)
class AgentClientTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "LC_ALL", "C");
    private static final Duration AWAIT = Duration.ofSeconds(30);

    @TempDir
    Path dir;
    private RealAgent agent;

    @BeforeEach
    void startAgent() throws Exception {
        agent = RealAgent.start(dir);
    }

    @AfterEach
    void stopAgent() throws Exception {
        agent.close();
    }

    private static ExecRequest command(String... argv) {
        return new ExecRequest(List.of(argv), ENV, "/", null, null);
    }

    private ProcessExit run(ExecRequest request, OutputListener listener) throws Exception {
        ProcessExit exit = agent.client.start(request, listener).await(AWAIT);
        assertThat(exit).as("exit of %s", request.argv()).isNotNull();
        return exit;
    }

    /**
     * DETACH (before a checkpoint): refused while an execution runs, the connection still usable;
     * otherwise the agent lets go and connects again to the socket it was told, in its first
     * socket's directory, and what an execution left in the background lives on.
     */
    @Test
    void detachIsRefusedWhileAnExecutionRunsAndOtherwiseTheAgentComesBackWhereItWasTold() throws Exception {
        AgentProcess sleep = agent.client.start(command("sleep", "100"), OutputListener.NONE);
        assertThatThrownBy(() -> agent.client.detach("a0123456789")).isInstanceOf(IOException.class)
                .hasMessageContaining("still running");
        sleep.signal(9);
        assertThat(sleep.await(AWAIT)).isNotNull();
        Output output = new Output();
        run(command("sh", "-c", "sleep 100 >/dev/null 2>&1 & echo $!"), output);
        String background = output.stdout().strip();

        agent.client.detach("a0123456789");
        assertThat(agent.client.isOpen()).isFalse();
        Path socket = dir.resolve("a0123456789");
        try (java.nio.channels.ServerSocketChannel listener = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
            listener.bind(java.net.UnixDomainSocketAddress.of(socket));
            java.nio.channels.SocketChannel channel = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return listener.accept();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).get(10, java.util.concurrent.TimeUnit.SECONDS);
            try (AgentClient again = AgentClient.connect(channel, Duration.ofSeconds(10))) {
                Output alive = new Output();
                ProcessExit exit = again.start(command("kill", "-0", background), alive).await(AWAIT);
                assertThat(exit).as("the background process lives on; %s", alive.stderr()).isEqualTo(new ProcessExit(0, 0, null));
            }
        }
        assertThat(agent.process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)).as("the agent ends with its new connection").isTrue();
    }

    @Test
    void forwardsStdoutAndStderr() throws Exception {
        Output output = new Output();

        ProcessExit exit = run(command("sh", "-c", "echo out; echo err >&2"), output);

        assertThat(exit).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(output.stdout()).isEqualTo("out\n");
        assertThat(output.stderr()).isEqualTo("err\n");
    }

    @Test
    void passesExactlyTheRequestedEnvironmentAndCwd() throws Exception {
        Output output = new Output();
        ExecRequest request = new ExecRequest(List.of("sh", "-c", "pwd; env | sort"), Map.of("PATH", "/usr/bin:/bin", "ONE", "1"), "/tmp", null, null);

        run(request, output);

        // sh itself adds PWD (and maybe SHLVL and _); nothing from the agent's own environment gets through.
        assertThat(output.stdout()).startsWith("/tmp\n").contains("ONE=1\n", "PATH=/usr/bin:/bin\n").doesNotContain("HOME=");
    }

    @Test
    void roundTripsStdin() throws Exception {
        Output output = new Output();
        AgentProcess cat = agent.client.start(command("cat"), output);

        cat.writeStdin("hello\n".getBytes(StandardCharsets.UTF_8));
        cat.writeStdin(new byte[0]);   // an empty write must not close stdin
        cat.writeStdin("world\n".getBytes(StandardCharsets.UTF_8));
        cat.closeStdin();

        assertThat(cat.await(AWAIT)).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(output.stdout()).isEqualTo("hello\nworld\n");
    }

    @Test
    void feedsStdinLargerThanAPipeAndAFrame() throws Exception {
        Output output = new Output();
        AgentProcess wc = agent.client.start(command("wc", "-c"), output);

        wc.writeStdin(new byte[3 * 1024 * 1024 + 17]);
        wc.closeStdin();

        assertThat(wc.await(AWAIT)).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(output.stdout().strip()).isEqualTo(Integer.toString(3 * 1024 * 1024 + 17));
    }

    @Test
    void reportsExitCodes() throws Exception {
        assertThat(run(command("sh", "-c", "exit 3"), OutputListener.NONE)).isEqualTo(new ProcessExit(3, 0, null));
        assertThat(run(command("true"), OutputListener.NONE)).isEqualTo(new ProcessExit(0, 0, null));
    }

    @Test
    void reportsTheSignalThatKilledAProcess() throws Exception {
        AgentProcess sleep = agent.client.start(command("sleep", "100"), OutputListener.NONE);
        assertThat(sleep.pid()).isPositive();

        sleep.signal(9);

        assertThat(sleep.await(AWAIT)).isEqualTo(new ProcessExit(137, 9, null));
    }

    @Test
    void reportsAProgramThatIsNotFound() throws Exception {
        ProcessExit exit = run(command("no-such-program-airlock"), OutputListener.NONE);

        assertThat(exit).isEqualTo(new ProcessExit(127, 0, "no-such-program-airlock: No such file or directory"));
    }

    @Test
    void reportsAWorkingDirectoryThatDoesNotExist() throws Exception {
        ProcessExit exit = run(command("true").withCwd("/no/such/dir"), OutputListener.NONE);

        assertThat(exit).isEqualTo(new ProcessExit(127, 0, "cannot change directory to /no/such/dir: No such file or directory"));
    }

    @Test
    void aBackgroundChildHoldingStdoutDoesNotHoldTheExitBack() throws Exception {
        Output output = new Output();

        ProcessExit exit = run(command("sh", "-c", "sleep 30 & echo $! >&2; echo hi"), output);

        assertThat(exit).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(output.stdout()).isEqualTo("hi\n");
        // The agent kills what is left of the process group when the connection closes.
        long background = Long.parseLong(output.stderr().strip());
        assertThat(ProcessHandle.of(background).map(ProcessHandle::isAlive)).contains(true);
        agent.close();
        awaitGone(background);
    }

    /**
     * SIGKILL to an execution ends everything it started: a setsid'd process and a daemon
     * double-forked into a session of its own too, since all of it stays below the execution's
     * supervisor (a child subreaper), whatever its session or process group.
     */
    @Test
    void killingAnExecutionKillsEverythingItStartedWhateverItsSession() throws Exception {
        String marker = marker();
        Output output = new Output();
        AgentProcess process = agent.client.start(command("sh", "-c", """
                setsid sh -c 'exec sleep %s1' </dev/null >/dev/null 2>&1 &
                (setsid sh -c 'sleep %s2 & wait' </dev/null >/dev/null 2>&1 &)
                echo started; sleep 1000
                """.formatted(marker, marker)), output);
        awaitAlive(marker + "1");
        awaitAlive(marker + "2");
        // the markers live before the echo runs: wait for its line, or the kill may come first
        for (int i = 0; i < 200 && output.stdout().isEmpty(); i++) {
            Thread.sleep(50);
        }

        process.signal(9);

        assertThat(process.await(AWAIT)).isEqualTo(new ProcessExit(137, 9, null));
        assertThat(output.stdout()).isEqualTo("started\n");
        awaitNoneAlive(marker);
        assertThat(run(command("true"), OutputListener.NONE)).as("the agent serves on").isEqualTo(new ProcessExit(0, 0, null));
    }

    /** A command that exits on its own leaves its background processes running (sessions rely on `cmd &`). */
    @Test
    void aNormalExitLeavesBackgroundProcessesRunning() throws Exception {
        String marker = marker();
        ProcessExit exit = run(command("sh", "-c", "sleep %s1 </dev/null >/dev/null 2>&1 & setsid sleep %s2 </dev/null >/dev/null 2>&1 & echo done"
                .formatted(marker, marker)), OutputListener.NONE);

        assertThat(exit).isEqualTo(new ProcessExit(0, 0, null));
        awaitAlive(marker + "1");
        awaitAlive(marker + "2");
        Thread.sleep(300);
        assertThat(living(marker)).as("background processes after the command's exit").hasSize(2);
        agent.close();
        awaitNoneAlive(marker);
    }

    /**
     * Code runs as the agent's uid and may SIGKILL its own supervisor: what it started is then
     * adopted by the agent, which kills every process it adopts that is not a supervisor. The
     * execution ends as its supervisor did.
     */
    @Test
    void killingItsSupervisorKillsTheWholeExecution() throws Exception {
        String marker = marker();
        AgentProcess process = agent.client.start(command("sh", "-c", """
                setsid sleep %s1 </dev/null >/dev/null 2>&1 &
                sleep 0.2; kill -9 $PPID; sleep %s2
                """.formatted(marker, marker)), OutputListener.NONE);

        assertThat(process.await(AWAIT)).isEqualTo(new ProcessExit(137, 9, null));
        awaitNoneAlive(marker);
        assertThat(run(command("true"), OutputListener.NONE)).as("the agent serves on").isEqualTo(new ProcessExit(0, 0, null));
    }

    /** STARTED names the command itself, a child of its supervisor, which is the agent's child. */
    @Test
    void theExecutionsPidIsTheCommandsUnderItsSupervisor() throws Exception {
        AgentProcess sleep = agent.client.start(command("sleep", "100"), OutputListener.NONE);
        ProcessHandle command = ProcessHandle.of(sleep.pid()).orElseThrow();
        ProcessHandle supervisor = command.parent().orElseThrow();

        assertThat(command.info().command()).hasValueSatisfying(c -> assertThat(c).endsWith("sleep"));
        assertThat(supervisor.parent().map(ProcessHandle::pid)).contains(agent.process.pid());
        sleep.signal(9);
        assertThat(sleep.await(AWAIT)).isEqualTo(new ProcessExit(137, 9, null));
    }

    @Test
    void runsManyProcessesAtOnce() throws Exception {
        List<AgentProcess> processes = new ArrayList<>();
        List<Output> outputs = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            Output output = new Output();
            outputs.add(output);
            processes.add(agent.client.start(command("sh", "-c", "sleep 0.2; echo $0", "p" + i), output));
        }
        for (int i = 0; i < 20; i++) {
            assertThat(processes.get(i).await(AWAIT)).isEqualTo(new ProcessExit(0, 0, null));
            assertThat(outputs.get(i).stdout()).isEqualTo("p" + i + "\n");
        }
    }

    @Test
    void deliversLargeOutputIntactInBoundedChunks() throws Exception {
        Output output = new Output();

        run(command("seq", "1", "800000"), output);

        String expected = IntStream.rangeClosed(1, 800000).mapToObj(Integer::toString).collect(Collectors.joining("\n", "", "\n"));
        assertThat(expected.length()).isGreaterThan(5_000_000);
        assertThat(output.stdout()).isEqualTo(expected);
        assertThat(output.largestChunk.get()).isLessThanOrEqualTo(64 * 1024);
    }

    @Test
    void writesAFileCreatingItsParents() throws Exception {
        Path file = dir.resolve("a/b/c.txt");

        agent.client.writeFile(file.toString(), "content".getBytes(StandardCharsets.UTF_8), 0640);

        assertThat(file).hasContent("content");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-r-----");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent()))).isEqualTo("rwxr-xr-x");
    }

    @Test
    void replacesAnExistingFile() throws Exception {
        Path file = dir.resolve("existing.txt");
        Files.writeString(file, "a much longer old content");

        agent.client.writeFile(file.toString(), "new".getBytes(StandardCharsets.UTF_8), 0600);

        assertThat(file).hasContent("new");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
    }

    @Test
    void refusesToWriteThroughASymlink() throws Exception {
        Path target = dir.resolve("target.txt");
        Files.writeString(target, "original");
        Path link = Files.createSymbolicLink(dir.resolve("link"), target);

        assertThatThrownBy(() -> agent.client.writeFile(link.toString(), "evil".getBytes(StandardCharsets.UTF_8), 0644))
                .isInstanceOf(IOException.class)
                .hasMessageContaining(link.toString())
                .hasMessageContaining("symbolic link");

        assertThat(target).hasContent("original");
        assertThat(agent.client.isOpen()).isTrue();
    }

    @Test
    void writesAByteArrayLargerThanOneFrame() throws Exception {
        byte[] content = new byte[2 * 1024 * 1024 + 3];
        new Random(7).nextBytes(content);
        Path file = dir.resolve("big");

        agent.client.writeFile(file.toString(), content, 0644);

        assertThat(Files.readAllBytes(file)).isEqualTo(content);
    }

    @Test
    void closingTheClientKillsRunningProcesses() throws Exception {
        AgentProcess sleep = agent.client.start(command("sleep", "100"), OutputListener.NONE);
        long pid = sleep.pid();
        assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive)).contains(true);

        agent.close();

        awaitGone(pid);
        assertThat(agent.client.isOpen()).isFalse();
        assertThatThrownBy(() -> sleep.await(AWAIT)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> agent.client.start(command("true"), OutputListener.NONE)).isInstanceOf(IOException.class);
    }

    /**
     * A held execution runs nothing until it is placed: the placement sees the forked process
     * still waiting (in the agent's image, not yet the command), and the command runs after.
     */
    @Test
    void heldExecutionRunsOnlyAfterItsPlacement() throws Exception {
        Path marker = dir.resolve("ran");
        List<String> seenAtPlacement = new ArrayList<>();
        AgentProcess process = agent.client.start(command("sh", "-c", "touch " + marker + "; echo placed"), new Output(), pid -> {
            seenAtPlacement.add(Files.exists(marker) ? "command ran" : "command not run");
            try {
                seenAtPlacement.add(Files.readString(Path.of("/proc/" + pid + "/comm")).strip());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        ProcessExit exit = process.await(AWAIT);

        assertThat(exit).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(seenAtPlacement).containsExactly("command not run", "airlock-agent");
        assertThat(marker).exists();
    }

    /** A placement that fails refuses the execution: the command never runs, and the failure reaches the caller. */
    @Test
    void refusedPlacementNeverRunsTheCommand() throws Exception {
        Path marker = dir.resolve("ran");
        assertThatThrownBy(() -> agent.client.start(command("touch", marker.toString()), OutputListener.NONE, pid -> {
            throw new IllegalStateException("no cgroup for you");
        })).isInstanceOf(IllegalStateException.class).hasMessage("no cgroup for you");

        assertThat(marker).doesNotExist();
        // The agent is still fine and serves the next execution.
        assertThat(run(command("true"), OutputListener.NONE)).isEqualTo(new ProcessExit(0, 0, null));
    }

    /** A held process killed (by other code of the sandbox) before it is released is reported as never started. */
    @Test
    void heldProcessKilledBeforeReleaseIsReportedAsNotStarted() throws Exception {
        AgentProcess process = agent.client.start(command("true"), OutputListener.NONE, pid -> {
            try {
                new ProcessBuilder("kill", "-9", Integer.toString(pid)).start().waitFor();
                awaitGone(pid);
                Thread.sleep(100);   // let the agent reap it and answer before RELEASE goes out
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        ProcessExit exit = process.await(AWAIT);

        assertThat(exit.exitCode()).isEqualTo(RemoteProcess.START_FAILED_EXIT_CODE);
        assertThat(exit.startError()).contains("killed before the host released it");
        assertThat(run(command("true"), OutputListener.NONE)).isEqualTo(new ProcessExit(0, 0, null));
    }

    /**
     * A spare supervisor, forked ahead and placed before any execution asks for it, runs the next
     * execution: the command is its child (no placement is asked for), with its own output, exit
     * code; a second SPARE while it waits names the same one.
     */
    @Test
    void executionStartedInASpareRunsUnderItWithoutAPlacement() throws Exception {
        int spare = agent.client.spare();
        assertThat(Files.readString(Path.of("/proc/" + spare + "/comm")).strip()).isEqualTo("airlock-agent");
        assertThat(agent.client.spare()).isEqualTo(spare);
        List<Integer> placed = new ArrayList<>();
        Output output = new Output();
        List<Integer> next = new ArrayList<>();
        AgentProcess process = agent.client.startInSpare(new ExecRequest(List.of("sh", "-c", "echo $PPID; echo err >&2; exit 3"),
                Map.of(), "/", new byte[0], null, null), output, placed::add, spare, next::add);
        // The next spare was forked before the command started, and named.
        assertThat(next).hasSize(1).doesNotContain(spare);
        assertThat(Files.readString(Path.of("/proc/" + next.getFirst() + "/comm")).strip()).isEqualTo("airlock-agent");

        assertThat(process.await(AWAIT)).isEqualTo(new ProcessExit(3, 0, null));
        assertThat(output.stdout()).isEqualTo(spare + "\n");
        assertThat(output.stderr()).isEqualTo("err\n");
        assertThat(placed).isEmpty();
        assertThat(agent.client.spare()).isEqualTo(next.getFirst());
    }

    /** A spare killed before its execution came (the sandbox's code may do that): the execution is held and placed instead. */
    @Test
    void killedSpareFallsBackToAHeldSupervisorThatIsPlaced() throws Exception {
        int spare = agent.client.spare();
        new ProcessBuilder("kill", "-9", Integer.toString(spare)).start().waitFor();
        awaitGone(spare);
        Thread.sleep(100);   // let the agent reap it
        List<Integer> placed = new ArrayList<>();
        Output output = new Output();
        List<Integer> next = new ArrayList<>();
        AgentProcess process = agent.client.startInSpare(command("sh", "-c", "echo ran"), output, placed::add, spare, next::add);

        assertThat(process.await(AWAIT)).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(output.stdout()).isEqualTo("ran\n");
        assertThat(placed).hasSize(1).doesNotContain(spare);
        assertThat(next).isEmpty();
    }

    /**
     * A spare stopped by the sandbox's code (SIGSTOP; it runs as the agent's user) would never fork
     * its command, and the agent would wait for it: it is killed, and the execution is held instead.
     */
    @Test
    void stoppedSpareIsKilledAndTheExecutionHeldInstead() throws Exception {
        int spare = agent.client.spare();
        new ProcessBuilder("kill", "-STOP", Integer.toString(spare)).start().waitFor();
        List<Integer> placed = new ArrayList<>();
        Output output = new Output();
        AgentProcess process = agent.client.startInSpare(command("sh", "-c", "echo ran"), output, placed::add, spare, pid -> { });

        assertThat(process.await(AWAIT)).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(output.stdout()).isEqualTo("ran\n");
        assertThat(placed).hasSize(1).doesNotContain(spare);
        awaitGone(spare);
    }

    /** EXEC_SPARE naming a process that is not the spare (the host's mistake) never hands it anything: the execution is held. */
    @Test
    void executionNamingAnotherProcessAsItsSpareIsHeld() throws Exception {
        List<Integer> placed = new ArrayList<>();
        Output output = new Output();
        int notTheSpare = (int) ProcessHandle.current().pid();
        AgentProcess process = agent.client.startInSpare(command("sh", "-c", "echo ran"), output, placed::add, notTheSpare, pid -> { });

        assertThat(process.await(AWAIT)).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(output.stdout()).isEqualTo("ran\n");
        assertThat(placed).hasSize(1).doesNotContain(notTheSpare);
    }

    /** A command that cannot start in a spare is reported as not started, and the next spare serves the next one. */
    @Test
    void commandThatCannotStartInASpareIsReportedAndTheNextSpareWorks() throws Exception {
        AgentProcess missing = agent.client.startInSpare(command("no-such-command-4711"), OutputListener.NONE, pid -> { }, agent.client.spare(), pid -> { });
        ProcessExit exit = missing.await(AWAIT);
        assertThat(exit.exitCode()).isEqualTo(RemoteProcess.START_FAILED_EXIT_CODE);
        assertThat(exit.startError()).contains("no-such-command-4711");

        Output output = new Output();
        AgentProcess next = agent.client.startInSpare(new ExecRequest(List.of("sh", "-c", "stty size"), Map.of(), "/", new byte[0],
                null, new TerminalSize(7, 33)), output, pid -> { }, agent.client.spare(), pid -> { });
        assertThat(next.await(AWAIT)).isEqualTo(new ProcessExit(0, 0, null));
        assertThat(output.stdout()).contains("7 33");
    }

    /** A number no other test's sleep has: "sleep <marker>N" names one process of this test. */
    private static String marker() {
        return "4711" + (System.nanoTime() % 1_000_000) + ".";
    }

    /** Pids of the live (not zombie) host processes whose command line holds {@code marker}. */
    private static List<Long> living(String marker) throws IOException {
        List<Long> found = new ArrayList<>();
        try (var entries = Files.list(Path.of("/proc"))) {
            for (Path p : entries.filter(p -> p.getFileName().toString().matches("\\d+")).toList()) {
                try {
                    String cmdline = Files.readString(p.resolve("cmdline")).replace('\0', ' ');
                    String stat = Files.readString(p.resolve("stat"));
                    if (cmdline.contains(marker) && !stat.substring(stat.lastIndexOf(')') + 2).startsWith("Z")) {
                        found.add(Long.parseLong(p.getFileName().toString()));
                    }
                } catch (IOException gone) {
                    // exited meanwhile
                }
            }
        }
        return found;
    }

    private static void awaitAlive(String marker) throws Exception {
        for (int i = 0; i < 200 && living(marker).isEmpty(); i++) {
            Thread.sleep(50);
        }
        assertThat(living(marker)).as("processes running '%s'", marker).isNotEmpty();
    }

    private static void awaitNoneAlive(String marker) throws Exception {
        for (int i = 0; i < 200 && !living(marker).isEmpty(); i++) {
            Thread.sleep(50);
        }
        assertThat(living(marker)).as("processes running '%s' 10 s after they should have died", marker).isEmpty();
    }

    /** Waits until {@code pid} is gone or a zombie (dead, waiting for whoever adopted it to reap it). */
    private static void awaitGone(long pid) throws Exception {
        Path stat = Path.of("/proc/" + pid + "/stat");
        for (int i = 0; i < 200; i++) {
            try {
                String s = Files.readString(stat);
                if (s.substring(s.lastIndexOf(')') + 2).startsWith("Z")) {
                    return;
                }
            } catch (IOException gone) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("process " + pid + " is still running 10 s after the agent's connection closed");
    }
}
