package dev.airlock.it;

import dev.airlock.client.Airlock;
import dev.airlock.client.EndReason;
import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.FileInfo;
import dev.airlock.client.Language;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.Run;
import dev.airlock.client.RunResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HexFormat;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A chart made as a program makes one (matplotlib's pyplot, then savefig) on the default
 * {@code system} image, which has no display and no /etc of the host's: through a one-shot run
 * (MCP's {@code run_code} is the same Run command) and through an execution in a sandbox. The
 * interpreter's inline charts are InterpreterTest's; the CLI's, RunCommandTest's.
 */
class ChartsTest {

    static final String PNG_SIGNATURE = "89504e470d0a1a0a";
    private static final String CHART = """
            import matplotlib.pyplot as plt
            plt.plot([1, 2, 3], [2, 4, 1])
            plt.title("a chart")
            plt.savefig("%s")
            print(plt.get_backend())
            """;
    private static LiveServer live;
    private static Airlock client;

    @BeforeAll
    static void start() {
        live = LiveServer.start(c -> c.withPoolSize(0));
        client = Airlock.connect(live.uri(), live.token());
    }

    @AfterAll
    static void stop() {
        try {
            if (client != null) {
                client.close();
            }
        } finally {
            if (live != null) {
                live.close(); // fails if any sandbox left anything on the host
            }
        }
    }

    @Test
    void aRunSavesAChartToItsOutputs() {
        RunResult r = client.run(Run.code(Language.PYTHON, CHART.formatted("/workspace/output/chart.png")));

        assertThat(r.endReason()).as(r.stderr()).isEqualTo(EndReason.EXITED);
        assertThat(r.exitCode()).as(r.stderr()).isZero();
        assertThat(r.stdout().strip()).as("no display: drawn to files").isEqualToIgnoringCase("agg");
        assertThat(r.stderr()).as("matplotlib finds its defaults and a writable cache").doesNotContain("matplotlibrc", "not writable");
        byte[] png = r.output("/workspace/output/chart.png").orElseThrow().content();
        assertThat(HexFormat.of().formatHex(Arrays.copyOf(png, 8))).isEqualTo(PNG_SIGNATURE);
    }

    @Test
    void anExecutionInASandboxSavesAChartAndKeepsMatplotlibOutOfWorkspace() {
        try (RemoteSandbox sandbox = client.create()) {
            ExecResult r = sandbox.exec(Exec.code(Language.PYTHON, CHART.formatted("/workspace/chart.png")));

            assertThat(r.exitCode()).as(r.stderr()).isZero();
            assertThat(r.stdout().strip()).isEqualToIgnoringCase("agg");
            byte[] png = sandbox.files().read("/workspace/chart.png");
            assertThat(HexFormat.of().formatHex(Arrays.copyOf(png, 8))).isEqualTo(PNG_SIGNATURE);
            assertThat(sandbox.files().list("/workspace")).extracting(FileInfo::path)
                    .as("matplotlib's cache and config stay in /tmp").contains("/workspace/chart.png")
                    .doesNotContain("/workspace/.config", "/workspace/.matplotlib");
            assertThat(sandbox.files().exists("/workspace/.cache/matplotlib")).isFalse();
            assertThat(sandbox.files().exists("/tmp/.matplotlib")).isTrue();
        }
    }
}
