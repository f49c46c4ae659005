package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Verifier.Outcome;
import dev.airlock.core.Limits;
import dev.airlock.core.Printable;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.airlock.cli.verify.RecoveryChecks.cleanUp;
import static dev.airlock.cli.verify.RecoveryChecks.leftovers;
import static dev.airlock.cli.verify.RecoveryChecks.verdict;

/**
 * The agent-flood scenario: a program writes to stdout as fast as it can until the timeout. The run
 * is an {@code airlock run --json} in its own JVM with a 64 MiB heap: if the host buffered the flood
 * it would die of OutOfMemoryError; it must instead keep exactly the output limit, end the run at
 * the timeout, and stay within {@link #RSS_BOUND} of resident memory (sampled from /proc while it
 * runs).
 */
final class AgentFloodScenario {

    private static final long RSS_BOUND = 384L << 20;
    private static final String CODE = """
            import os, sys, time
            chunk = b"x" * (1 << 20)
            n, t0 = 0, time.monotonic()
            while time.monotonic() - t0 < 4.0:
                n += os.write(1, chunk)
            os.write(2, f"flooded {n}\\n".encode())
            time.sleep(1000)
            """;

    private AgentFloodScenario() {
    }

    static Outcome run(VerifyTarget target) throws IOException, InterruptedException {
        long limit = Limits.DEFAULTS.outputBytes();
        ChildCli cli = ChildCli.start(target, List.of("-Xmx64m"), false, "--timeout", "6", "--json", "--lang", "python", "--code", CODE);
        Process process = cli.process();
        long peak = 0;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (process.isAlive() && System.nanoTime() < deadline) {
                peak = Math.max(peak, HostProcesses.rss(process.pid()));
                process.waitFor(20, TimeUnit.MILLISECONDS);
            }
            if (process.isAlive()) {
                return Outcome.broken("the flooded 'airlock run' did not end within 120s of a 6s timeout");
            }
            cli.awaitOutput();
            JsonNode result;
            try {
                result = JsonMapper.builder().build().readTree(cli.out());
            } catch (RuntimeException e) {
                return Outcome.broken("the flooded 'airlock run' (64 MiB heap) exited " + process.exitValue() + " without its JSON result; stderr "
                        + Printable.quoted(cli.err(), Findings.SHOWN_CHARS));
            }
            long flooded = parseFlooded(result.path("stderr").asString(""));
            int kept = result.path("stdout").asString("").getBytes(StandardCharsets.UTF_8).length;
            String happened = "a program wrote " + (flooded < 0 ? "an unknown amount" : String.format("%.2f GiB", flooded / (double) (1L << 30)))
                    + " to stdout in 4s under an 'airlock run' with a 64 MiB heap; the run ended " + result.path("endReason").asString("?")
                    + ", exit code " + result.path("exitCode").asInt() + ", kept " + kept + " bytes of stdout (truncated "
                    + result.path("truncated").asBoolean() + "); the CLI's resident memory peaked at " + (peak >> 20) + " MiB (bound "
                    + (RSS_BOUND >> 20) + " MiB)";
            if (flooded < 64 * limit) {
                return Outcome.error(happened + "; the flood was too small (under 64 times the output limit) to prove anything");
            }
            List<String> problems = new ArrayList<>();
            if (!"timed_out".equals(result.path("endReason").asString())) {
                problems.add("the run ended " + result.path("endReason").asString() + ", expected timed_out");
            }
            if (!result.path("truncated").asBoolean() || kept != limit) {
                problems.add("stdout kept " + kept + " bytes, expected exactly the limit of " + limit + ", marked truncated");
            }
            if (peak > RSS_BOUND) {
                problems.add("the CLI's resident memory grew to " + (peak >> 20) + " MiB while the sandbox flooded its channel");
            }
            String sandboxId = result.path("sandboxId").asString("");
            if (sandboxId.startsWith("al-")) {
                problems.addAll(leftovers(target, sandboxId));
            }
            return verdict(happened, problems);
        } finally {
            cli.kill();
            cleanUp(target);
        }
    }

    /** The byte count of the program's "flooded N" line on stderr; -1 without one. */
    private static long parseFlooded(String stderr) {
        for (String line : stderr.split("\n")) {
            if (line.startsWith("flooded ")) {
                try {
                    return Long.parseLong(line.substring(8).trim());
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
        }
        return -1;
    }
}
