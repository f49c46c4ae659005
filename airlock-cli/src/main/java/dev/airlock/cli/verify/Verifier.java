package dev.airlock.cli.verify;

import dev.airlock.cli.verify.Findings.Finding;
import dev.airlock.cli.verify.Findings.Status;
import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Printable;
import dev.airlock.core.RunRequest;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import dev.airlock.oci.OciDriver;
import dev.airlock.oci.OciDriverConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * Runs cases against real sandboxes. Sandbox cases go through one {@link Engine} on the configured
 * runtime and state directory, as one-shot runs (the path {@code airlock run} and the REST API
 * take); recovery scenarios each get their own engine on a temporary state directory
 * ({@link Recovery}), so a server running on this host is never disturbed.
 */
public final class Verifier {

    private final OciDriverConfig config;
    /** Whether the sandboxes run under gVisor (runsc): cases with a {@code gvisor} expectation use it. */
    private final boolean gvisor;

    /** @param config the driver configuration to verify, weakenings included */
    public Verifier(OciDriverConfig config) {
        this.config = config;
        this.gvisor = HostProcesses.gvisor(config);
    }

    /**
     * Runs every case, in order, and reports each as it ends.
     *
     * @param progress called with (index from 1, finding) after each case
     */
    public List<Finding> run(List<VerifyCase> cases, BiConsumer<Integer, Finding> progress) {
        List<Finding> findings = new ArrayList<>();
        boolean needsEngine = cases.stream().anyMatch(c -> c.kind() != VerifyCase.Kind.RECOVERY);
        Engine engine = needsEngine ? new Engine(new OciDriver(config)) : null;
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
                            ? new Recovery(config.withWeakenings(java.util.Set.of())).run(c.scenario())
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
        SandboxSpec spec = new SandboxSpec(SandboxSpec.SYSTEM_IMAGE, c.limits(), Map.of());
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
            case OUTLIVE -> gvisor ? outliveUnderGvisor(engine, c, p, spec)
                    : outlive(c, p, () -> oneShot(engine, c, c.code(), p, spec), "the run", Verifier::onHost, "on the host");
            case OUTLIVE_EXECUTION -> {
                try (Sandbox sb = engine.create(spec)) {
                    // Under gVisor the sandbox's processes are Sentry tasks the host never sees: look inside the live sandbox.
                    yield outlive(c, p, () -> sb.exec(sb.codeRequest(c.language(), c.program(c.code(), p))),
                            "the execution (in sandbox " + sb.id() + ", which lives on)",
                            gvisor ? marker -> inSandbox(sb, marker) : Verifier::onHost, gvisor ? "in the sandbox" : "on the host");
                }
            }
            case RECOVERY -> throw new IllegalStateException("recovery cases run in Recovery");
        };
    }

    private static ExecResult oneShot(Engine engine, VerifyCase c, String text, VerifyCase.Placeholders p, SandboxSpec spec) {
        return engine.run(new RunRequest(c.language(), c.program(text, p), null, spec)).result();
    }

    private Outcome judge(VerifyCase c, VerifyCase.Placeholders p, ExecResult r, String before) {
        List<String> mismatches = c.expectFor(gvisor).mismatches(r, p);
        String happened = gvisorNote(c) + before + observed(r);
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
            r = run.get(c.limits().timeout().toMillis() + 60_000, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            return Outcome.error("the run did not end: " + e);
        }
        if (!seen) {
            return Outcome.error("the process '" + marker + "' was never seen " + where + " while the run lived, so its absence "
                    + "afterwards proves nothing" + (gvisor && where.equals("on the host")
                    ? " (under gVisor the sandbox's processes are Sentry tasks, never host processes)" : "") + ": " + observed(r));
        }
        List<String> mismatches = c.expectFor(gvisor).mismatches(r, p);
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
     * A one-shot run that leaves a process behind, under gVisor, where the host sees only the host
     * processes of the sandbox's Sentry, never its tasks. The run is made the way a one-shot run is
     * (create, execute, close); the process must be seen inside the sandbox after the execution
     * ended (else the check proves nothing), and once the sandbox is closed no host process of its
     * Sentry may remain: no task of it can live on then.
     */
    private Outcome outliveUnderGvisor(Engine engine, VerifyCase c, VerifyCase.Placeholders p, SandboxSpec spec) {
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
        List<String> mismatches = new ArrayList<>(c.expectFor(true).mismatches(r, p));
        boolean gone = HostProcesses.eventually(15_000, () -> HostProcesses.inSandboxes(id).isEmpty());
        String happened = "the run: " + observed(r) + "\nleft in the sandbox after it: " + String.join("; ", seen)
                + "\nafter the sandbox was closed: " + (gone ? "no host process of its gVisor kernel remains, so none of its tasks lives"
                : "host processes of its gVisor kernel still run 15s later: " + HostProcesses.describe(HostProcesses.inSandboxes(id)));
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

    /** Says that the case was judged by its gVisor expectation, and why, or nothing. */
    private String gvisorNote(VerifyCase c) {
        return gvisor && c.gvisor() != null ? "under gVisor: " + c.gvisor().why() + "\n" : "";
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
