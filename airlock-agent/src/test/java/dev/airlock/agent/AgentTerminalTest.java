package dev.airlock.agent;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.OutputListener;
import dev.airlock.core.SandboxAgent.AgentProcess;
import dev.airlock.core.SandboxAgent.ProcessExit;
import dev.airlock.core.TerminalSize;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Executions on a pseudo-terminal (protocol version 5: EXEC with a terminal size, RESIZE), with
 * the real agent binary run on the host.
 */
@Timeout(120)
class AgentTerminalTest {

    private static final Map<String, String> ENV = Map.of("PATH", "/usr/bin:/bin", "LC_ALL", "C", "PS1", "$ ");
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

    private static ExecRequest onTerminal(int rows, int cols, String... argv) {
        return new ExecRequest(List.of(argv), ENV, "/", null, null, new TerminalSize(rows, cols));
    }

    private static void awaitOutput(Output output, String text) throws InterruptedException {
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (!output.stdout().contains(text)) {
            assertThat(System.nanoTime()).as("waiting for %s in %s", text, output.stdout()).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    /** Waits for a line that is {@code line}, after the prompt ({@code $ }) or not: the echo of typed input races the output. */
    private static void awaitLine(Output output, String line) throws InterruptedException {
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (java.util.Arrays.stream(output.stdout().split("\r\n")).noneMatch(l -> l.equals(line) || l.equals("$ " + line))) {
            assertThat(System.nanoTime()).as("waiting for the line %s in %s", line, output.stdout()).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    @Test
    void runsTheCommandOnATerminalThatIsItsControllingTerminal() throws Exception {
        Output output = new Output();
        ProcessExit exit = agent.client.start(onTerminal(24, 80, "sh", "-c", "tty; stty size; echo err >&2; test -t 0 && echo interactive"),
                output).await(AWAIT);

        assertThat(exit).isEqualTo(new ProcessExit(0, 0, null));
        // stderr is the terminal too: one stream, with the terminal's CR LF line ends
        assertThat(output.stdout()).matches("(?s)/dev/pts/\\d+\r\n24 80\r\nerr\r\ninteractive\r\n");
        assertThat(output.stderr()).isEmpty();
    }

    @Test
    void relaysInputResizesAndInterrupts() throws Exception {
        Output output = new Output();
        AgentProcess shell = agent.client.start(onTerminal(24, 80, "sh", "-i"), output);

        shell.writeStdin("echo $((6*7))\n".getBytes(StandardCharsets.UTF_8));
        awaitLine(output, "42");

        shell.resize(new TerminalSize(50, 132));
        shell.writeStdin("stty size\n".getBytes(StandardCharsets.UTF_8));
        awaitLine(output, "50 132");

        long started = System.nanoTime();
        shell.writeStdin("sleep 100; echo after-sleep\n".getBytes(StandardCharsets.UTF_8));
        Thread.sleep(300);
        shell.writeStdin(new byte[] {3});   // ^C: the line discipline sends SIGINT to the foreground job
        shell.writeStdin("echo interrupted\n".getBytes(StandardCharsets.UTF_8));
        awaitLine(output, "interrupted");
        assertThat(Duration.ofNanos(System.nanoTime() - started)).isLessThan(Duration.ofSeconds(20));

        shell.writeStdin("exit 7\n".getBytes(StandardCharsets.UTF_8));
        assertThat(shell.await(AWAIT)).isEqualTo(new ProcessExit(7, 0, null));
        assertThat(output.stdout()).doesNotContain("\nafter-sleep\r\n");   // the echoed command line has it, not a line of its own
    }

    @Test
    void killingATerminalExecutionKillsItsWholeTree() throws Exception {
        Output output = new Output();
        AgentProcess shell = agent.client.start(onTerminal(24, 80, "sh", "-c", "setsid sleep 1000 & echo $!; exec sleep 1000"), output);
        awaitOutput(output, "\r\n");
        int background = Integer.parseInt(output.stdout().strip());
        assertThat(Path.of("/proc/" + background)).exists();

        shell.signal(9);

        assertThat(shell.await(AWAIT)).isEqualTo(new ProcessExit(137, 9, null));
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (Path.of("/proc/" + background).toFile().exists() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(Path.of("/proc/" + background)).doesNotExist();
    }

    @Test
    void aProcessWithoutATerminalCannotBeResized() throws Exception {
        AgentProcess cat = agent.client.start(new ExecRequest(List.of("cat"), ENV, "/", null, null), OutputListener.NONE);

        assertThatThrownBy(() -> cat.resize(new TerminalSize(10, 10))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("has no terminal");
        cat.closeStdin();
        assertThat(cat.await(AWAIT)).isEqualTo(new ProcessExit(0, 0, null));
    }

    @Test
    void refusesSizesOutOfRange() {
        assertThatThrownBy(() -> new TerminalSize(0, 80)).hasMessageContaining("from 1 to 1000");
        assertThatThrownBy(() -> new TerminalSize(24, 1001)).hasMessageContaining("from 1 to 1000");
    }
}
