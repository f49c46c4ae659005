package dev.airlock.core.contract;

import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Sandbox;
import dev.airlock.core.TerminalSize;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Executions on a pseudo-terminal ({@link ExecRequest#tty()}): the sandbox has its own devpts, the
 * command's terminal is its controlling terminal, input, resize and ^C reach it, and a kill still
 * ends everything it started. A terminal gives the code nothing it did not have: the pts is the
 * sandbox's own, and none of the host's terminals is visible.
 */
public abstract class TerminalContract extends ContractTestBase {

    private static final Duration AWAIT = Duration.ofSeconds(30);

    protected TerminalContract(DriverContract driver) {
        super(driver);
    }

    /** Collects a terminal's output. */
    private static final class Screen implements OutputListener {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        @Override
        public synchronized void stdout(byte[] chunk) {
            bytes.writeBytes(chunk);
        }

        synchronized String text() {
            return bytes.toString(StandardCharsets.UTF_8);
        }

        /** Waits for a line that is {@code line}, after the shell's prompt or not (its echo of typed input races its output). */
        void awaitLine(String line) throws InterruptedException {
            long deadline = System.nanoTime() + AWAIT.toNanos();
            while (java.util.Arrays.stream(text().split("\r\n")).noneMatch(l -> l.equals(line) || l.equals("$ " + line))) {
                assertThat(System.nanoTime()).as("waiting for the line %s on the terminal, which shows: %s", line, text()).isLessThan(deadline);
                Thread.sleep(20);
            }
        }

        void await(String text) throws InterruptedException {
            long deadline = System.nanoTime() + AWAIT.toNanos();
            while (!text().contains(text)) {
                assertThat(System.nanoTime()).as("waiting for %s on the terminal, which shows: %s", text, text()).isLessThan(deadline);
                Thread.sleep(20);
            }
        }
    }

    private static ExecRequest shell() {
        return new ExecRequest(List.of("sh", "-i"), Map.of("PS1", "$ "), ExecRequest.DEFAULT_CWD, null, Duration.ofSeconds(120),
                new TerminalSize(24, 80));
    }

    @Test
    @Tag("smoke")
    void anInteractiveShellGetsInputAndResize() throws Exception {
        try (Sandbox sb = engine.create(spec())) {
            Screen screen = new Screen();
            Execution shell = sb.startAttached(shell(), screen);

            shell.writeStdin("echo $((6*7)); tty; echo $TERM\n".getBytes(StandardCharsets.UTF_8));
            screen.awaitLine("42");
            screen.awaitLine("xterm-256color");
            assertThat(screen.text()).containsPattern("\r\n/dev/pts/\\d+\r\n");

            shell.resize(new TerminalSize(40, 120));
            shell.writeStdin("stty size\n".getBytes(StandardCharsets.UTF_8));
            screen.awaitLine("40 120");

            shell.writeStdin("exit 3\n".getBytes(StandardCharsets.UTF_8));
            ExecResult r = shell.await();
            assertThat(r.exitCode()).as(screen.text()).isEqualTo(3);
        }
    }

    /**
     * ^C typed on the terminal. The host kernel's line discipline turns it into SIGINT for the
     * foreground job. The Sentry of the runsc release tested (20221219) does not implement that
     * (ISIG): the byte reaches the program as input, echoed as is, and the job runs on; a kill of
     * the execution still ends it.
     */
    @Test
    void controlCInterruptsTheForegroundJob() throws Exception {
        try (Sandbox sb = engine.create(spec())) {
            Screen screen = new Screen();
            Execution shell = sb.startAttached(shell(), screen);
            shell.writeStdin("sleep 100\n".getBytes(StandardCharsets.UTF_8));
            Thread.sleep(1000);
            shell.writeStdin(new byte[] {3});
            shell.writeStdin("echo after-interrupt\n".getBytes(StandardCharsets.UTF_8));
            if (driver.kernel() == SandboxKernel.GVISOR) {
                screen.await("\u0003echo after-interrupt\r\n");
                Thread.sleep(1000);
                assertThat(screen.text()).as("the sleep was not interrupted").doesNotContain("\r\nafter-interrupt\r\n", "$ after-interrupt\r\n");
                shell.signal(9);
                assertThat(shell.await().exitCode()).isEqualTo(137);
                return;
            }
            screen.awaitLine("after-interrupt");
            assertThat(screen.text()).contains("^C");
            shell.writeStdin("exit\n".getBytes(StandardCharsets.UTF_8));
            assertThat(shell.await().exitCode()).as(screen.text()).isZero();
        }
    }

    @Test
    void aKillEndsEverythingATerminalExecutionStarted() throws Exception {
        try (Sandbox sb = engine.create(spec())) {
            Screen screen = new Screen();
            Execution shell = sb.startAttached(shell(), screen);
            shell.writeStdin("setsid sleep 1000 & echo started\n".getBytes(StandardCharsets.UTF_8));
            screen.awaitLine("started");

            shell.signal(9);

            assertThat(shell.await().exitCode()).isEqualTo(137);
            ExecResult left = sb.exec(ExecRequest.of("sh", "-c", "for p in /proc/[0-9]*; do cat $p/comm; done"));
            assertThat(left.stdoutText().lines()).as("processes left in the sandbox").doesNotContain("sleep");
        }
    }

    @Test
    void theSandboxSeesOnlyItsOwnTerminals() {
        try (Sandbox sb = engine.create(spec())) {
            // listed, not stat'ed: the Sentry answers a stat of its devpts with EINVAL
            ExecResult r = sb.exec(ExecRequest.of("python3", "-c", "import os; print(sorted(os.listdir('/dev/pts')))"));
            // a devpts instance of its own: no terminal is open in a new sandbox (the host's pts are not there)
            assertThat(r.stdoutText().strip()).as(r.stdoutText() + r.stderrText()).isIn("['ptmx']", "[]");
        }
    }
}
