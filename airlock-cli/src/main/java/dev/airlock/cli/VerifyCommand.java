package dev.airlock.cli;

import dev.airlock.cli.verify.Catalogue;
import dev.airlock.cli.verify.Findings;
import dev.airlock.cli.verify.Findings.Finding;
import dev.airlock.cli.verify.Verifier;
import dev.airlock.cli.verify.VerifyCase;
import dev.airlock.cli.verify.VerifyTarget;
import dev.airlock.core.AirlockException;
import dev.airlock.oci.Weakening;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code airlock verify}: runs the catalogue of attacks against real sandboxes on this host and
 * reports, per control, whether it held. Exits 1 when any control is broken (or a case could not run).
 */
@Command(name = "verify", mixinStandardHelpOptions = true,
        description = {"Attack real sandboxes on this host with the catalogue of hostile cases and report which controls held.",
                "Exits 0 when every control held, 1 when any is broken or a case could not run."})
final class VerifyCommand implements Callable<Integer> {

    /** Exit status when a control is broken or a case could not be run. */
    static final int EXIT_BROKEN = 1;

    @Option(names = "--json", description = "Print one JSON document with every finding (progress goes to stderr).")
    boolean json;

    @Option(names = "--case", arity = "1..*", paramLabel = "NAME", description = "Run only these cases (repeatable).")
    List<String> cases = new ArrayList<>();

    @Option(names = "--catalogue", paramLabel = "DIR", description = "A directory of your own case files (NAME.json) to run too (repeatable); see docs/verify.md.")
    List<Path> catalogues = new ArrayList<>();

    @Option(names = "--list", description = "List the cases and exit.")
    boolean list;

    @Option(names = "--unsafe", description = "Allow --unsafe-disable. Only for proving that verify detects breakage; never for workloads.")
    boolean unsafe;

    @Option(names = "--unsafe-disable", paramLabel = "CONTROL", split = ",",
            description = "Run against a deliberately weakened sandbox: seccomp (no system-call filter) or netns (the host's network namespace). Needs --unsafe.")
    List<String> disable = new ArrayList<>();

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Override
    public Integer call() {
        Set<Weakening> weakenings = weakenings();
        List<List<VerifyCase>> extra = new ArrayList<>();
        for (Path dir : catalogues) {
            extra.add(Catalogue.directory(dir));
        }
        List<VerifyCase> selected = Catalogue.select(Catalogue.merge(Catalogue.builtIn(), extra), cases);
        PrintStream out = System.out;
        PrintStream progress = json ? System.err : System.out;
        if (list) {
            selected.forEach(c -> out.printf("%-34s %-18s %-13s %s%n", c.name(), c.control(), c.kind().label(), c.description()));
            return 0;
        }
        if (engineOptions.microVm() && !weakenings.isEmpty()) {
            throw AirlockException.invalid("--unsafe-disable weakens container sandboxes (runc, crun, airlock, runsc); the microvm tier has no"
                    + " such switch: leave it out, or give an OCI --runtime");
        }
        VerifyTarget target = engineOptions.microVm() ? new VerifyTarget.MicroVm(engineOptions.microVmConfig())
                : new VerifyTarget.Oci(engineOptions.driverConfig().withWeakenings(weakenings));
        List<String> weakened = weakenings.stream().map(Enum::name).sorted().toList();
        if (!weakenings.isEmpty()) {
            System.err.println("airlock: UNSAFE: verifying DELIBERATELY WEAKENED sandboxes (" + String.join(", ", weakened)
                    + "); expect broken controls. Never run workloads this way.");
        }
        progress.println("airlock verify: " + selected.size() + " cases against " + target.runtime() + " (state " + target.stateRoot() + ")"
                + (target.timeScale() == 1 ? "" : ", each case's timeout ×" + target.timeScale() + " (software emulation)")
                + (weakenings.isEmpty() ? "" : ", WEAKENED: " + String.join(", ", weakened)));
        int total = selected.size();
        List<Finding> findings = new Verifier(target).run(selected, (i, f) -> {
            progress.println(Findings.progressLine(i, total, f));
            if (f.status() != Findings.Status.HELD) {
                progress.print(Findings.details(f));
            }
            progress.flush();
        });
        if (json) {
            out.println(Findings.toJson(findings, target.runtime(), weakened));
        } else {
            out.println(Findings.summary(findings));
        }
        return Findings.count(findings, Findings.Status.HELD) == findings.size() ? 0 : EXIT_BROKEN;
    }

    private Set<Weakening> weakenings() {
        Set<Weakening> set = EnumSet.noneOf(Weakening.class);
        for (String d : disable) {
            switch (d.trim()) {
                case "seccomp" -> set.add(Weakening.NO_SECCOMP);
                case "netns" -> set.add(Weakening.HOST_NETWORK_NAMESPACE);
                default -> throw AirlockException.invalid("--unsafe-disable '" + d + "' is not a control verify can disable: use seccomp or netns");
            }
        }
        if (!set.isEmpty() && !unsafe) {
            throw AirlockException.invalid("--unsafe-disable weakens every sandbox of this run: add --unsafe to confirm");
        }
        return set;
    }
}
