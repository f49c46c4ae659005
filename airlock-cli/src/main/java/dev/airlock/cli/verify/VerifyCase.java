package dev.airlock.cli.verify;

import dev.airlock.core.EndReason;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.Printable;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * One attack of the verify catalogue, as parsed from its case file ({@link CaseParser}).
 *
 * @param name        unique name, also the file's name without {@code .json}
 * @param control     the control the case attacks (filesystem, syscall-filter, network-namespace...)
 * @param description what the attack tries, in one sentence
 * @param remedy      what to change when the control is found broken
 * @param kind        how the case runs
 * @param language    language of {@code setup} and {@code code} (null for recovery scenarios)
 * @param prelude     whether the Python helper prelude ({@link Prelude#PYTHON}) goes before the code
 * @param setup       code run first: a one-shot run (two-runs) or in the first sandbox (two-sandboxes)
 * @param code        the attack itself
 * @param limits      the sandbox's limits, defaults with the case's overrides
 * @param marker      for outlive and outlive-execution: text in the command line of the process that must not outlive the run
 * @param scenario    for recovery: which host-side scenario
 * @param expect      the outcome that shows the control held
 * @param gvisor      where gVisor (runsc) holds the control in its own way: why, and the outcome that
 *                    shows it held there (used instead of {@code expect} under runsc); null otherwise
 * @param microvm     the same for the microVM tier (a QEMU guest with its own kernel); null otherwise
 * @param source      where the case came from (built-in, or the file's path)
 */
public record VerifyCase(String name, String control, String description, String remedy, Kind kind,
                         Language language, boolean prelude, String setup, String code, Limits limits,
                         String marker, String scenario, Expect expect, TierExpect gvisor, TierExpect microvm,
                         String source) {

    /** How a control shows it held in one tier, when that differs from {@link #expect()}: why, and the outcome. */
    public record TierExpect(String why, Expect expect) {
    }

    /** The tier's own expectation, or null when the case has none for it. */
    TierExpect forTier(VerifyTarget.Tier tier) {
        return switch (tier) {
            case CONTAINER -> null;
            case GVISOR -> gvisor;
            case MICROVM -> microvm;
        };
    }

    /** The expectation for a sandbox of the given tier: the tier's own, when the case has one. */
    Expect expectFor(VerifyTarget.Tier tier) {
        TierExpect own = forTier(tier);
        return own != null ? own.expect() : expect;
    }

    /** How a case runs. */
    public enum Kind {
        /** One one-shot run (the path {@code airlock run} and the REST API take). */
        RUN,
        /** A one-shot run of {@code setup}, then a second one-shot run of {@code code}. */
        TWO_RUNS,
        /** Two live sandboxes: {@code setup} in the first, then {@code code} in the second. */
        TWO_SANDBOXES,
        /** A one-shot run that leaves a process behind; the host then checks it is gone. */
        OUTLIVE,
        /**
         * An execution in a live sandbox that leaves a process behind and is ended by its timeout
         * (or exits); the host checks the process is gone while the sandbox lives on.
         */
        OUTLIVE_EXECUTION,
        /** A host-side recovery scenario, each in its own temporary state directory. */
        RECOVERY;

        static Kind parse(String s) {
            return valueOf(s.toUpperCase().replace('-', '_'));
        }

        public String label() {
            return name().toLowerCase().replace('_', '-');
        }
    }

    /** The expected outcome; a field left null is not checked. */
    public record Expect(String stdout, Pattern stdoutRegex, String stderr, Pattern stderrRegex,
                         EndReason endReason, Integer exitCode, Boolean truncated, Long stdoutBytes) {

        boolean isEmpty() {
            return stdout == null && stdoutRegex == null && stderr == null && stderrRegex == null
                    && endReason == null && exitCode == null && truncated == null && stdoutBytes == null;
        }

        /** Where {@code r} differs from this expectation, one line each; empty when it matches. */
        List<String> mismatches(ExecResult r, Placeholders p) {
            List<String> out = new ArrayList<>();
            if (endReason != null && r.endReason() != endReason) {
                out.add("end reason was " + label(r.endReason()) + ", expected " + label(endReason));
            }
            if (exitCode != null && r.exitCode() != exitCode) {
                out.add("exit code was " + r.exitCode() + ", expected " + exitCode);
            }
            if (truncated != null && r.truncated() != truncated) {
                out.add("truncated was " + r.truncated() + ", expected " + truncated);
            }
            if (stdoutBytes != null && r.stdout().length != stdoutBytes) {
                out.add("stdout was " + r.stdout().length + " bytes, expected " + stdoutBytes);
            }
            if (stdout != null && !r.stdoutText().equals(p.apply(stdout))) {
                out.add("stdout differs: expected " + Printable.quoted(p.apply(stdout), Findings.SHOWN_CHARS));
            }
            if (stdoutRegex != null && !stdoutRegex.matcher(r.stdoutText()).matches()) {
                out.add("stdout does not match " + Printable.quoted(stdoutRegex.pattern(), Findings.SHOWN_CHARS));
            }
            if (stderr != null && !r.stderrText().equals(p.apply(stderr))) {
                out.add("stderr differs: expected " + Printable.quoted(p.apply(stderr), Findings.SHOWN_CHARS));
            }
            if (stderrRegex != null && !stderrRegex.matcher(r.stderrText()).matches()) {
                out.add("stderr does not match " + Printable.quoted(stderrRegex.pattern(), Findings.SHOWN_CHARS));
            }
            return out;
        }
    }

    static String label(EndReason reason) {
        return reason.name().toLowerCase();
    }

    /** The program text of {@code code} or {@code setup}, with the prelude and placeholders applied. */
    String program(String text, Placeholders p) {
        String body = p.apply(text);
        return prelude ? Prelude.PYTHON + body : body;
    }

    /** Values substituted for {@code {{token}}} and {@code {{number}}}: fresh for every case run. */
    record Placeholders(String token, String number) {

        static Placeholders fresh() {
            java.security.SecureRandom random = new java.security.SecureRandom();
            byte[] b = new byte[8];
            random.nextBytes(b);
            StringBuilder hex = new StringBuilder("airlock-verify-");
            for (byte x : b) {
                hex.append(String.format("%02x", x));
            }
            return new Placeholders(hex.toString(), (1000 + random.nextInt(9000)) + "." + (100000 + random.nextInt(900000)));
        }

        String apply(String text) {
            return text == null ? null : text.replace("{{token}}", token).replace("{{number}}", number);
        }
    }

    static int utf8Length(String s) {
        return s.getBytes(StandardCharsets.UTF_8).length;
    }
}
