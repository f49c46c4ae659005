package dev.airlock.cli.bench;

import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Prints the cases: the latency table as it always was, one table per further section, or one JSON document. */
public final class Report {

    private static final Map<String, String> TITLES = Map.of(
            ThroughputCases.SECTION, "throughput: runs per second, several clients at once",
            MemoryCases.SECTION, "memory: host memory per idle sandbox, MiB",
            EgressCases.SECTION, "egress: 100 MB over loopback, ms per download");

    private final String machine;
    private final Map<String, String> methods = new LinkedHashMap<>();
    private final List<Stats> cases;
    private final List<String> notes;

    public Report(String machine, Map<String, String> methods, List<Stats> cases, List<String> notes) {
        this.machine = machine;
        this.methods.putAll(methods);
        this.cases = cases;
        this.notes = notes;
    }

    public void printTable(PrintStream out) {
        out.printf("%-52s %9s %9s %9s %8s%n", "case", "median ms", "p10 ms", "p90 ms", "x bare");
        for (Stats s : cases) {
            if (s.section().equals(Stats.LATENCY)) {
                row(out, s);
            }
        }
        for (String section : List.of(ThroughputCases.SECTION, MemoryCases.SECTION, EgressCases.SECTION)) {
            List<Stats> rows = cases.stream().filter(s -> s.section().equals(section)).toList();
            if (rows.isEmpty()) {
                continue;
            }
            out.printf("%n%s (%s)%n", TITLES.get(section), methods.get(section));
            out.printf("%-68s %9s %9s %9s %8s%n", "case", "median", "p10", "p90", "ratio");
            rows.forEach(s -> out.printf(Locale.ROOT, "%-68s %9.2f %9.2f %9.2f %8s%n", s.name(), s.median(), s.p10(), s.p90(),
                    s.ratio() == null ? "" : String.format(Locale.ROOT, "%.2f", s.ratio())));
        }
        if (!notes.isEmpty()) {
            out.println();
            notes.forEach(out::println);
        }
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
        ArrayNode n = root.putArray("notes");
        notes.forEach(n::add);
        out.println(json.writerWithDefaultPrettyPrinter().writeValueAsString(root));
    }
}
