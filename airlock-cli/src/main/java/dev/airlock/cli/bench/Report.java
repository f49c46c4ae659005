package dev.airlock.cli.bench;

import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Prints the cases: the latency table as it always was, the tiers side by side, one table per
 * further section; or one JSON document, which also says of each tier whether it was measured.
 */
public final class Report {

    private static final Map<String, String> TITLES = Map.of(
            ThroughputCases.SECTION, "throughput: runs per second, several clients at once",
            MemoryCases.SECTION, "memory: host memory per idle sandbox, MiB",
            EgressCases.SECTION, "egress: 100 MB over loopback, ms per download",
            InterpreterCases.SECTION, "interpreter: contexts and cells through the REST API, ms",
            SnapshotCases.SECTION, "snapshots: take, restore and fork over REST, ms",
            CliCases.SECTION, "cli: a one-shot as a user types it, a process per run",
            ClusterCases.SECTION, "cluster: three nodes on this host, one PostgreSQL (bench --cluster)");
    private static final String TAILS_TITLE = "tails: ms per request, several clients at once through the REST API";
    private static final String TIERS_TITLE = "tiers: each isolation tier that works here, side by side with the bare baselines";

    private final String machine;
    private final Map<String, String> methods = new LinkedHashMap<>();
    private final List<Stats> cases;
    private final List<Stats> tierBaselines;
    private final List<TierCases.Outcome> tiers;
    private final List<TailCases.Tail> tails;
    private final List<String> notes;

    /**
     * @param cases         every case, of every section
     * @param tierBaselines the bare baselines the tiers table shows above the tiers (they are among {@code cases} already)
     * @param tiers         what became of each tier chosen, measured or not
     * @param tails         the latency tails, at each level of concurrency
     */
    public Report(String machine, Map<String, String> methods, List<Stats> cases, List<Stats> tierBaselines, List<TierCases.Outcome> tiers,
                  List<TailCases.Tail> tails, List<String> notes) {
        this.machine = machine;
        this.methods.putAll(methods);
        this.cases = cases;
        this.tierBaselines = tierBaselines;
        this.tiers = tiers;
        this.tails = tails;
        this.notes = notes;
    }

    public void printTable(PrintStream out) {
        List<Stats> latency = cases.stream().filter(s -> s.section().equals(Stats.LATENCY)).toList();
        if (!latency.isEmpty()) {
            out.printf("%-52s %9s %9s %9s %8s%n", "case", "median ms", "p10 ms", "p90 ms", "x bare");
            latency.forEach(s -> row(out, s));
        }
        printTiers(out);
        for (String section : List.of(InterpreterCases.SECTION, ThroughputCases.SECTION, MemoryCases.SECTION, EgressCases.SECTION,
                SnapshotCases.SECTION, CliCases.SECTION, ClusterCases.SECTION)) {
            List<Stats> rows = cases.stream().filter(s -> s.section().equals(section)).toList();
            if (rows.isEmpty()) {
                continue;
            }
            out.printf("%n%s (%s)%n", TITLES.get(section), methods.get(section));
            out.printf("%-68s %9s %9s %9s %8s%n", "case", "median", "p10", "p90", "ratio");
            rows.forEach(s -> wideRow(out, s));
        }
        printTails(out);
        if (!notes.isEmpty()) {
            out.println();
            notes.forEach(out::println);
        }
    }

    /** The tiers side by side under the bare baselines; a tier not measured is one line saying why. */
    private void printTiers(PrintStream out) {
        if (tiers.isEmpty()) {
            return;
        }
        out.printf("%n%s (%s)%n", TIERS_TITLE, methods.get(TierCases.SECTION));
        out.printf("%-68s %9s %9s %9s %8s%n", "case", "median", "p10", "p90", "x bare");
        tierBaselines.forEach(s -> wideRow(out, s));
        for (TierCases.Outcome tier : tiers) {
            if (tier.works()) {
                tier.cases().forEach(s -> wideRow(out, s));
            } else {
                out.println(tier.tier() + ": not measured here (see the notes below)");
            }
        }
    }

    /** The tails: percentiles of the requests that succeeded and the share that failed, which should be 0. */
    private void printTails(PrintStream out) {
        if (tails.isEmpty()) {
            return;
        }
        out.printf("%n%s (%s)%n", TAILS_TITLE, methods.get(TailCases.SECTION));
        out.printf("%-52s %7s %8s %9s %9s %9s %7s%n", "case", "clients", "requests", "p50", "p95", "p99", "failed");
        for (TailCases.Tail t : tails) {
            out.printf(Locale.ROOT, "%-52s %7d %8d %9.2f %9.2f %9.2f %6.1f%%%n", t.name(), t.clients(), t.requests(), t.p50(), t.p95(),
                    t.p99(), 100 * t.failedShare());
        }
        tails.stream().filter(t -> t.firstFailure() != null).forEach(t -> out.printf("  %s, %d clients: first failure: %s%n",
                t.name(), t.clients(), t.firstFailure()));
    }

    private static void wideRow(PrintStream out, Stats s) {
        out.printf(Locale.ROOT, "%-68s %9.2f %9.2f %9.2f %8s%n", s.name(), s.median(), s.p10(), s.p90(),
                s.ratio() == null ? "" : String.format(Locale.ROOT, "%.2f", s.ratio()));
    }

    private static void row(PrintStream out, Stats s) {
        out.printf(Locale.ROOT, "%-52s %9.2f %9.2f %9.2f %8s%n", s.name(), s.median(), s.p10(), s.p90(),
                s.ratio() == null ? "" : String.format(Locale.ROOT, "%.2f", s.ratio()));
    }

    public void printJson(PrintStream out) {
        JsonMapper json = JsonMapper.builder().build();
        ObjectNode root = json.createObjectNode();
        root.put("machine", machine);
        ObjectNode method = root.putObject("method");
        methods.forEach(method::put);
        ArrayNode list = root.putArray("cases");
        for (Stats s : cases) {
            ObjectNode c = list.addObject();
            c.put("section", s.section());
            c.put("name", s.name());
            c.put("median", s.median());
            c.put("p10", s.p10());
            c.put("p90", s.p90());
            if (s.ratio() == null) {
                c.putNull("ratio");
                c.putNull("baseline");
            } else {
                c.put("ratio", s.ratio());
                c.put("baseline", s.baseline());
            }
            c.put("unit", s.unit());
        }
        ArrayNode tailList = root.putArray("tails");
        for (TailCases.Tail t : tails) {
            ObjectNode o = tailList.addObject().put("name", t.name()).put("clients", t.clients()).put("requests", t.requests())
                    .put("failed", t.failed()).put("unit", "ms").put("firstFailure", t.firstFailure());
            // no percentile when every request failed: null, as JSON has no NaN
            for (Map.Entry<String, Double> p : Map.of("p50", t.p50(), "p95", t.p95(), "p99", t.p99()).entrySet()) {
                if (p.getValue().isNaN()) {
                    o.putNull(p.getKey());
                } else {
                    o.put(p.getKey(), p.getValue());
                }
            }
        }
        ArrayNode t = root.putArray("tiers");
        for (TierCases.Outcome tier : tiers) {
            t.addObject().put("tier", tier.tier()).put("driver", tier.driver()).put("works", tier.works()).put("detail", tier.detail());
        }
        ArrayNode n = root.putArray("notes");
        notes.forEach(n::add);
        out.println(json.writerWithDefaultPrettyPrinter().writeValueAsString(root));
    }
}
