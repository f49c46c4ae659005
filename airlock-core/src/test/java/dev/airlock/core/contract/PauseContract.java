package dev.airlock.core.contract;

import dev.airlock.core.AirlockException;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Sandbox;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Pause and resume: a paused sandbox's processes are frozen (not scheduled at all, so a process
 * spinning on the CPU makes no progress), nothing new reaches its agent until it resumes, its
 * processes carry on where they stopped after it, and a paused sandbox can be destroyed.
 */
public abstract class PauseContract extends ContractTestBase {

    /** How long the cases keep a sandbox paused. */
    private static final Duration PAUSE = Duration.ofSeconds(3);

    /**
     * Spins on the CPU, timing every turn of its loop: the longest gap between two turns is the
     * longest time it was not scheduled. It runs until {@code RUN_FOR} seconds after it started.
     */
    private static final String SPINNER = """
            import sys, time
            start = last = time.monotonic()
            longest, turns = 0.0, 0
            print('spinning', flush=True)
            while last - start < float(sys.argv[1]):
                now = time.monotonic()
                longest = max(longest, now - last)
                last = now
                turns += 1
            print(f'{longest:.2f} {turns}')
            """;

    protected PauseContract(DriverContract driver) {
        super(driver);
    }

    @Test
    @Tag("smoke")
    void aSpinningProcessMakesNoProgressWhilePausedAndCarriesOnAfter() throws Exception {
        try (Sandbox sb = engine.create(spec())) {
            sb.writeFile("/tmp/spin.py", SPINNER.getBytes(StandardCharsets.UTF_8));
            CountDownLatch spinning = new CountDownLatch(1);
            Execution spinner = sb.start(ExecRequest.of("/usr/bin/python3", "/tmp/spin.py", "1").withTimeout(Duration.ofSeconds(60)),
                    new OutputListener() {
                        @Override
                        public void stdout(byte[] chunk) {
                            spinning.countDown();
                        }
                    });
            assertThat(spinning.await(60, TimeUnit.SECONDS)).as("the spinner started").isTrue();
            sb.pause();
            assertThat(sb.isPaused()).isTrue();
            Thread.sleep(PAUSE.toMillis());
            sb.resume();
            assertThat(sb.isPaused()).isFalse();

            ExecResult r = spinner.await();
            assertThat(r.exitCode()).as(r.stderrText()).isZero();
            String[] out = r.stdoutText().lines().reduce((a, b) -> b).orElseThrow().split(" ");
            double longestGap = Double.parseDouble(out[0]);
            assertThat(longestGap).as("the longest time the spinner was not scheduled, in seconds: it was frozen for the %d s pause",
                    PAUSE.toSeconds()).isGreaterThanOrEqualTo(PAUSE.toSeconds() - 0.5);
            assertThat(Long.parseLong(out[1])).as("turns of the spinner's loop: it ran before and after the pause").isPositive();
        }
    }

    @Test
    void aPausedSandboxRefusesExecutionsAndFilesUntilItResumes() {
        try (Sandbox sb = engine.create(spec())) {
            sb.writeFile("/workspace/kept.txt", "before the pause".getBytes(StandardCharsets.UTF_8));
            sb.pause();
            sb.pause(); // a second pause changes nothing
            assertThatThrownBy(() -> exec(sb, "true"))
                    .isInstanceOfSatisfying(AirlockException.class, e -> assertThat(e.kind()).isEqualTo(AirlockException.Kind.CONFLICT))
                    .hasMessageContaining("is paused").hasMessageContaining("resume it");
            assertThatThrownBy(() -> sb.writeFile("/workspace/late.txt", new byte[1]))
                    .isInstanceOfSatisfying(AirlockException.class, e -> assertThat(e.kind()).isEqualTo(AirlockException.Kind.CONFLICT));
            assertThatThrownBy(sb::files)
                    .isInstanceOfSatisfying(AirlockException.class, e -> assertThat(e.kind()).isEqualTo(AirlockException.Kind.CONFLICT));

            sb.resume();
            sb.resume(); // resuming a running sandbox changes nothing
            assertThat(ok(exec(sb, "cat", "/workspace/kept.txt")).stdoutText()).isEqualTo("before the pause");
        }
    }

    @Test
    void aPausedSandboxCanBeDestroyedAndLeavesNothing() {
        Sandbox sb = engine.create(spec());
        Execution sleeper = sb.start(ExecRequest.of("sleep", "600").withTimeout(Duration.ofSeconds(700)), OutputListener.NONE);
        sb.pause();
        sb.close(); // the class's leak check after the last case proves nothing of it is left
        assertThat(sb.isOpen()).isFalse();
        assertThat(sleeper.await().endReason()).as("the frozen process ended with its sandbox").isNotNull();
        assertThatThrownBy(sb::resume)
                .isInstanceOfSatisfying(AirlockException.class, e -> assertThat(e.kind()).isEqualTo(AirlockException.Kind.CONFLICT));
    }
}
