package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Findings.Finding;
import dev.airlock.cli.verify.Findings.Status;
import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Limits;
import dev.airlock.core.Printable;
import dev.airlock.core.RunRequest;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * Runs cases against real sandboxes. Sandbox cases go through one {@link Engine} on the configured
 * runtime and state directory, as one-shot runs (the path {@code airlock run} and the REST API
 * take), the same on every isolation tier ({@link VerifyTarget}); recovery scenarios each get
 * their own engine on a temporary state directory ({@link Recovery}), so a server running on this
 * host is never disturbed.
 */
public final class Verifier {

    private final VerifyTarget target;
    /** The sandboxes' tier: cases with an expectation of its own ({@code gvisor}, {@code microvm}) use it. */
    private final VerifyTarget.Tier tier;

    /** @param target the tier and driver settings to verify, weakenings included */
    public Verifier(VerifyTarget target) {
        this.target = target;
        this.tier = target.tier();
    }

    /**
     * Runs every case, in order, and reports each as it ends.
     *
     * @param progress called with (index from 1, finding) after each case
     */
    public List<Finding> run(List<VerifyCase> cases, BiConsumer<Integer, Finding> progress) {
        List<Finding> findings = new ArrayList<>();
        boolean needsEngine = cases.stream().anyMatch(c -> c.kind() != VerifyCase.Kind.RECOVERY);
        Engine engine = needsEngine ? new Engine(target.open()) : null;
        // Ctrl-C or SIGTERM during verify destroys its sandboxes, as 'airlock run' does.
        Thread hook = engine == null ? null : new Thread(engine::close, "airlock-verify-shutdown");
        if (hook != null) {
            Runtime.getRuntime().addShutdownHook(hook);
        }
        try {
            for (VerifyCase c : cases) {
                long start = System.nanoTime();
                Outcome o;
                try {
                    o = c.kind() == VerifyCase.Kind.RECOVERY
                            ? new Recovery(target.unweakened()).run(c.scenario())
                            : runCase(engine, c);
                } catch (AirlockException e) {
                    o = Outcome.error("the case could not run: " + e.getMessage());
                } catch (RuntimeException e) {
                    o = Outcome.error("the case failed inside verify: " + e);
                }
                Finding f = new Finding(c.name(), c.control(), o.status(), c.description(), o.happened(),
                        o.status() == Status.BROKEN ? c.remedy() : null,
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), c.source());
                findings.add(f);
                progress.accept(findings.size(), f);
            }
        } finally {
            if (engine != null) {
                engine.close();
                try {
                    Runtime.getRuntime().removeShutdownHook(hook);
                } catch (IllegalStateException shuttingDown) {
                    // the hook is running or has run: the engine is closed either way
                }
            }
        }
        return findings;
    }

    /** A verdict and what was observed. */
    record Outcome(Status status, String happened) {
        static Outcome held(String happened) {
            return new Outcome(Status.HELD, happened);
        }

        static Outcome broken(String happened) {
            return new Outcome(Status.BROKEN, happened);
        }

        static Outcome error(String happened) {
            return new Outcome(Status.ERROR, happened);
        }
    }

    private Outcome runCase(Engine engine, VerifyCase c) {
        VerifyCase.Placeholders p = VerifyCase.Placeholders.fresh();
        SandboxSpec spec = new SandboxSpec(SandboxSpec.SYSTEM_IMAGE, limits(c), Map.of());
        return switch (c.kind()) {
            case RUN -> judge(c, p, oneShot(engine, c, c.code(), p, spec), "");
            case TWO_RUNS -> {
                ExecResult first = oneShot(engine, c, c.setup(), p, spec);
                if (first.endReason() != EndReason.EXITED || first.exitCode() != 0) {
                    yield Outcome.error("the setup run did not succeed, so the check proves nothing: " + observed(first));
                }
                yield judge(c, p, oneShot(engine, c, c.code(), p, spec), "first run: " + observed(first) + "\nsecond run: ");
            }
            case TWO_SANDBOXES -> {
                try (Sandbox a = engine.create(spec); Sandbox b = engine.create(spec)) {
                    ExecResult first = a.exec(a.codeRequest(c.language(), c.program(c.setup(), p)));
                    if (first.endReason() != EndReason.EXITED || first.exitCode() != 0) {
                        yield Outcome.error("the setup in the first sandbox did not succeed, so the check proves nothing: " + observed(first));
                    }
                    ExecResult second = b.exec(b.codeRequest(c.language(), c.program(c.code(), p)));
                    yield judge(c, p, second, "first sandbox " + a.id() + ": " + observed(first) + "\nsecond sandbox " + b.id() + " (both alive): ");
                }
            }
            case OUTLIVE -> tier.ownKernel() ? outliveUnderOwnKernel(engine, c, p, spec)
                    : outlive(c, p, () -> oneShot(engine, c, c.code(), p, spec), "the run", Verifier::onHost, "on the host");
            case OUTLIVE_EXECUTION -> {
                try (Sandbox sb = engine.create(spec)) {
                    // Under gVisor or in a guest the host never sees the sandbox's processes: look inside the live sandbox.
                    yield outlive(c, p, () -> sb.exec(sb.codeRequest(c.language(), c.program(c.code(), p))),
                            "the execution (in sandbox " + sb.id() + ", which lives on)",
                            tier.ownKernel() ? marker -> inSandbox(sb, marker) : Verifier::onHost,
                            tier.ownKernel() ? "in the sandbox" : "on the host");
                }
            }
            case RECOVERY -> throw new IllegalStateException("recovery cases run in Recovery");
        };
    }

    /** The case's limits, its timeout multiplied by the tier's {@link VerifyTarget#timeScale()}. */
    private Limits limits(VerifyCase c) {
        return c.limits().withTimeout(c.limits().timeout().multipliedBy(target.timeScale()));
    }

    private static ExecResult oneShot(Engine engine, VerifyCase c, String text, VerifyCase.Placeholders p, SandboxSpec spec) {
        return engine.run(new RunRequest(c.language(), c.program(text, p), null, spec)).result();
    }

    private Outcome judge(VerifyCase c, VerifyCase.Placeholders p, ExecResult r, String before) {
        List<String> mismatches = c.expectFor(tier).mismatches(r, p);
        String happened = tierNote(c) + before + observed(r);
        if (mismatches.isEmpty()) {
            return Outcome.held(happened);
        }
        return Outcome.broken(happened + "\n" + String.join("\n", mismatches));
    }

    /**
     * The run (a one-shot run, or one execution in a sandbox that lives on) leaves a process behind
     * on purpose. It must be seen on the host while the run lives (else the check proves nothing),
     * and be gone from the host soon after the run ended.
     */
    private Outcome outlive(VerifyCase c, VerifyCase.Placeholders p, java.util.function.Supplier<ExecResult> execution, String what,
                            java.util.function.Function<String, List<String>> probe, String where) {
        String marker = p.apply(c.marker());
        CompletableFuture<ExecResult> run = CompletableFuture.supplyAsync(execution);
        // What the first probe that found the process saw: probing again could come too late, since
        // inside a gVisor sandbox one probe (an execution of its own) takes about as long as a short run.
        java.util.concurrent.atomic.AtomicReference<List<String>> sighting = new java.util.concurrent.atomic.AtomicReference<>(List.of());
        HostProcesses.eventually(15_000, () -> {
            List<String> found = probe.apply(marker);
            if (!found.isEmpty()) {
                sighting.set(found);
                return true;
            }
            return run.isDone();
        });
        boolean seen = !sighting.get().isEmpty();
        String seenAs = String.join("; ", sighting.get());
        ExecResult r;
        try {
            r = run.get(limits(c).timeout().toMillis() + 60_000, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            return Outcome.error("the run did not end: " + e);
        }
        if (!seen) {
            return Outcome.error("the process '" + marker + "' was never seen " + where + " while the run lived, so its absence "
                    + "afterwards proves nothing: " + observed(r));
        }
        List<String> mismatches = c.expectFor(tier).mismatches(r, p);
        boolean gone = HostProcesses.eventually(15_000, () -> probe.apply(marker).isEmpty());
        String happened = "while the run lived, seen " + where + ": " + seenAs + "\n" + what + ": " + observed(r) + "\nafter the run: "
                + (gone ? "no process '" + marker + "' remains " + where
                : "still running " + where + " 15s after the run ended: " + String.join("; ", probe.apply(marker)));
        if (!gone) {
            mismatches = new ArrayList<>(mismatches);
            mismatches.add("a process of the run outlived it");
        }
        return mismatches.isEmpty() ? Outcome.held(happened) : Outcome.broken(happened + "\n" + String.join("\n", mismatches));
    }

    /**
     * A one-shot run that leaves a process behind, in a tier whose sandbox has a kernel of its own
     * (gVisor's Sentry, a microVM's guest), where the host sees only that kernel's host processes,
     * never the sandbox's. The run is made the way a one-shot run is (create, execute, close); the
     * process must be seen inside the sandbox after the execution ended (else the check proves
     * nothing), and once the sandbox is closed no host process of its kernel may remain: no process
     * of it can live on then.
     */
    private Outcome outliveUnderOwnKernel(Engine engine, VerifyCase c, VerifyCase.Placeholders p, SandboxSpec spec) {
        String marker = p.apply(c.marker());
        ExecResult r;
        List<String> seen;
        String id;
        try (Sandbox sb = engine.create(spec)) {
            id = sb.id().value();
            r = sb.exec(sb.codeRequest(c.language(), c.program(c.code(), p)));
            seen = inSandbox(sb, marker);
        }
        if (seen.isEmpty()) {
            return Outcome.error("the process '" + marker + "' was not seen in the sandbox after the run, so its absence "
                    + "afterwards proves nothing: " + observed(r));
        }
        List<String> mismatches = new ArrayList<>(c.expectFor(tier).mismatches(r, p));
        boolean gone = HostProcesses.eventually(15_000, () -> HostProcesses.inSandboxes(target, id).isEmpty());
        String happened = "the run: " + observed(r) + "\nleft in the sandbox after it: " + String.join("; ", seen)
                + "\nafter the sandbox was closed: " + (gone ? "no host process of " + tier.kernel() + " remains, so none of its processes lives"
                : "host processes of " + tier.kernel() + " still run 15s later: " + HostProcesses.describe(HostProcesses.inSandboxes(target, id)));
        if (!gone) {
            mismatches.add("the sandbox's kernel, and with it the process the run left, outlived the run");
        }
        return mismatches.isEmpty() ? Outcome.held(happened) : Outcome.broken(happened + "\n" + String.join("\n", mismatches));
    }

    private static List<String> onHost(String marker) {
        return HostProcesses.withCommandLine(marker).stream()
                .map(h -> "pid " + h.pid() + " uid " + h.uid() + " '" + h.cmdline() + "'").toList();
    }

    /**
     * Command lines holding {@code marker} among the live sandbox's own processes, read from its
     * /proc by a probe whose own command line does not hold the marker (it reads it from a file).
     * Empty when the sandbox cannot be asked.
     */
    private static List<String> inSandbox(Sandbox sb, String marker) {
        try {
            sb.writeFile("/tmp/.airlock-verify-marker", marker.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            ExecResult r = sb.exec(dev.airlock.core.ExecRequest.of("/usr/bin/python3", "-c", """
                    import os
                    m = open("/tmp/.airlock-verify-marker").read()
                    for p in os.listdir("/proc"):
                        if p.isdigit():
                            try:
                                c = open(f"/proc/{p}/cmdline").read().replace("\\0", " ").strip()
                            except OSError:
                                continue
                            if m in c:
                                print("pid", p, repr(c))
                    """).withTimeout(java.time.Duration.ofSeconds(20)));
            return r.stdoutText().lines().toList();
        } catch (AirlockException e) {
            return List.of();
        }
    }

    /** Says that the case was judged by its tier's own expectation, and why, or nothing. */
    private String tierNote(VerifyCase c) {
        VerifyCase.TierExpect own = c.forTier(tier);
        return own == null ? "" : (tier == VerifyTarget.Tier.GVISOR ? "under gVisor: " : "in a microVM guest: ") + own.why() + "\n";
    }

    static String observed(ExecResult r) {
        StringBuilder sb = new StringBuilder();
        sb.append("ended ").append(VerifyCase.label(r.endReason())).append(", exit code ").append(r.exitCode());
        if (r.truncated()) {
            sb.append(", output truncated");
        }
        sb.append(", stdout ").append(r.stdout().length <= 400 ? Printable.quoted(r.stdoutText(), Findings.SHOWN_CHARS) : r.stdout().length + " bytes");
        if (r.stderr().length > 0) {
            sb.append(", stderr ").append(Printable.quoted(r.stderrText(), Findings.SHOWN_CHARS));
        }
        return sb.toString();
    }
}
