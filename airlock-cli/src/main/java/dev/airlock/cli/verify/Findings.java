package dev.airlock.cli.verify;

import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.util.List;

/** What verify found: one {@link Finding} per case, and how to print them. */
public final class Findings {

    /** How much of an output or a message a report quotes (with Printable.quoted): enough to recognize it. */
    static final int SHOWN_CHARS = 400;

    /** How a case came out. */
    public enum Status {
        /** The attack failed: the control held. */
        HELD,
        /** The attack got through, or the outcome was not the one that shows the control. */
        BROKEN,
        /** The case could not be run to a verdict (the host lacks something, the case is wrong). */
        ERROR
    }

    /**
     * @param tried    what the attack tried
     * @param happened what was observed
     * @param remedy   what to change; set only when broken
     */
    public record Finding(String name, String control, Status status, String tried, String happened, String remedy,
                          long durationMs, String source) {
    }

    private Findings() {
    }

    /** One progress line: status, name, control, duration. */
    public static String progressLine(int index, int total, Finding f) {
        String counter = "[" + " ".repeat(Integer.toString(total).length() - Integer.toString(index).length()) + index + "/" + total + "]";
        return String.format("%s %-6s %-34s %-18s %6.1fs", counter, f.status().name().toLowerCase(), f.name(), f.control(),
                f.durationMs() / 1000.0);
    }

    /** The detail lines printed under a case that did not hold. */
    public static String details(Finding f) {
        StringBuilder sb = new StringBuilder();
        sb.append("         tried:    ").append(f.tried()).append('\n');
        sb.append("         happened: ").append(f.happened().replace("\n", "\n                   ")).append('\n');
        if (f.remedy() != null) {
            sb.append("         change:   ").append(f.remedy()).append('\n');
        }
        return sb.toString();
    }

    public static String summary(List<Finding> findings) {
        long held = count(findings, Status.HELD), broken = count(findings, Status.BROKEN), errors = count(findings, Status.ERROR);
        StringBuilder sb = new StringBuilder();
        sb.append(findings.size()).append(" cases: ").append(held).append(" held, ").append(broken).append(" broken, ")
                .append(errors).append(" could not be run");
        if (broken > 0) {
            sb.append("\nBROKEN controls: ");
            sb.append(String.join(", ", findings.stream().filter(f -> f.status() == Status.BROKEN)
                    .map(f -> f.name() + " (" + f.control() + ")").toList()));
        }
        return sb.toString();
    }

    public static long count(List<Finding> findings, Status status) {
        return findings.stream().filter(f -> f.status() == status).count();
    }

    public static String toJson(List<Finding> findings, String runtime, List<String> weakenings) {
        JsonMapper json = JsonMapper.builder().build();
        ObjectNode root = json.createObjectNode();
        root.put("runtime", runtime);
        root.put("profile", weakenings.isEmpty() ? "default" : "weakened-for-test");
        ArrayNode w = root.putArray("weakenings");
        weakenings.forEach(w::add);
        root.put("held", count(findings, Status.HELD));
        root.put("broken", count(findings, Status.BROKEN));
        root.put("errors", count(findings, Status.ERROR));
        ArrayNode cases = root.putArray("findings");
        for (Finding f : findings) {
            ObjectNode n = cases.addObject();
            n.put("name", f.name());
            n.put("control", f.control());
            n.put("status", f.status().name().toLowerCase());
            n.put("tried", f.tried());
            n.put("happened", f.happened());
            if (f.remedy() != null) {
                n.put("remedy", f.remedy());
            }
            n.put("durationMs", f.durationMs());
            n.put("source", f.source());
        }
        return json.writerWithDefaultPrettyPrinter().writeValueAsString(root);
    }
}
