package dev.airlock.cli.verify;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import java.util.stream.Collectors;

/**
 * Reads one case file strictly: every field is known and of the right type, the required ones are
 * there, and the kind's own fields are present (and the others absent). Any problem is an
 * {@link AirlockException} naming the file and the field.
 */
final class CaseParser {

    static final Set<String> CONTROLS = Set.of("filesystem", "pid-namespace", "privileges", "syscall-filter",
            "network-namespace", "limits", "cleanup", "cross-sandbox", "recovery");
    static final Set<String> SCENARIOS = Set.of("killed-engine", "killed-agent", "agent-flood", "disk-full", "output-tree",
            "egress-flood");
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,63}");
    private static final Set<String> FIELDS = Set.of("name", "control", "description", "remedy", "kind", "language",
            "prelude", "setup", "code", "limits", "marker", "scenario", "expect", "gvisor", "microvm");
    private static final Set<String> TIER_FIELDS = Set.of("why", "expect");
    private static final Set<String> LIMIT_FIELDS = Set.of("timeout", "memory", "cpus", "pids", "output-limit",
            "file-size", "open-files", "disk");
    private static final Set<String> EXPECT_FIELDS = Set.of("stdout", "stdoutRegex", "stderr", "stderrRegex",
            "endReason", "exitCode", "truncated", "stdoutBytes");
    private static final JsonMapper JSON = JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

    private final String file;

    private CaseParser(String file) {
        this.file = file;
    }

    /**
     * @param file     how to name the file in errors (its path, or built-in:NAME)
     * @param fileName the file's own name: must be {@code <name>.json}
     */
    static VerifyCase parse(String file, String fileName, String text) {
        return new CaseParser(file).parse(fileName, text);
    }

    private VerifyCase parse(String fileName, String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JacksonException e) {
            throw error(null, "is not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw error(null, "must hold one JSON object");
        }
        unknownFields(root, FIELDS, "");
        String name = requiredString(root, "name");
        if (!NAME.matcher(name).matches()) {
            throw error("name", "'" + name + "' is not a case name: use lower-case letters, digits and '-', at most 64");
        }
        if (!fileName.equals(name + ".json")) {
            throw error("name", "'" + name + "' does not match the file name " + fileName + ": name the file " + name + ".json");
        }
        String control = requiredString(root, "control");
        if (!CONTROLS.contains(control)) {
            throw error("control", "'" + control + "' is not a control: use one of " + sorted(CONTROLS));
        }
        String description = requiredString(root, "description");
        String remedy = requiredString(root, "remedy");
        String kindText = optionalString(root, "kind");
        VerifyCase.Kind kind;
        try {
            kind = kindText == null ? VerifyCase.Kind.RUN : VerifyCase.Kind.parse(kindText);
        } catch (IllegalArgumentException e) {
            throw error("kind", "'" + kindText + "' is not a kind: use one of "
                    + Arrays.stream(VerifyCase.Kind.values()).map(VerifyCase.Kind::label).toList());
        }
        if (kind == VerifyCase.Kind.RECOVERY) {
            for (String f : List.of("language", "prelude", "setup", "code", "limits", "marker", "expect", "gvisor", "microvm")) {
                if (root.has(f)) {
                    throw error(f, "is not used by a recovery case: its checks are built into the scenario; remove it");
                }
            }
            String scenario = requiredString(root, "scenario");
            if (!SCENARIOS.contains(scenario)) {
                throw error("scenario", "'" + scenario + "' is not a recovery scenario: use one of " + sorted(SCENARIOS));
            }
            return new VerifyCase(name, control, description, remedy, kind, null, false, null, null, Limits.DEFAULTS,
                    null, scenario, null, null, null, file);
        }
        if (root.has("scenario")) {
            throw error("scenario", "is only for kind recovery; remove it");
        }
        String languageText = requiredString(root, "language");
        Language language;
        try {
            language = Language.parse(languageText);
        } catch (AirlockException e) {
            throw error("language", e.getMessage());
        }
        boolean prelude = false;
        if (root.has("prelude")) {
            JsonNode p = root.get("prelude");
            if (!p.isBoolean()) {
                throw error("prelude", "must be true or false");
            }
            prelude = p.asBoolean();
            if (prelude && language != Language.PYTHON) {
                throw error("prelude", "the prelude is Python: set it only with language python");
            }
        }
        String code = requiredText(root, "code");
        String setup = optionalText(root, "setup");
        boolean needsSetup = kind == VerifyCase.Kind.TWO_RUNS || kind == VerifyCase.Kind.TWO_SANDBOXES;
        if (needsSetup && setup == null) {
            throw error("setup", "is missing: kind " + kind.label() + " runs setup first, then code");
        }
        if (!needsSetup && setup != null) {
            throw error("setup", "is only for kinds two-runs and two-sandboxes; remove it");
        }
        String marker = optionalString(root, "marker");
        boolean outlives = kind == VerifyCase.Kind.OUTLIVE || kind == VerifyCase.Kind.OUTLIVE_EXECUTION;
        if (outlives && (marker == null || marker.isBlank())) {
            throw error("marker", "is missing: kind " + kind.label() + " needs the text of the command line that must not outlive the run");
        }
        if (!outlives && marker != null) {
            throw error("marker", "is only for kinds outlive and outlive-execution; remove it");
        }
        Limits limits = limits(root.get("limits"));
        VerifyCase.Expect expect = expect(root.get("expect"));
        return new VerifyCase(name, control, description, remedy, kind, language, prelude, setup, code, limits,
                marker, null, expect, tierExpect(root, "gvisor", "gVisor"), tierExpect(root, "microvm", "a microVM guest"), file);
    }

    /**
     * The optional {@code gvisor} or {@code microvm} object: {@code why} the control holds
     * differently in that tier, and the {@code expect}ed outcome that shows it held there.
     */
    private VerifyCase.TierExpect tierExpect(JsonNode root, String field, String tier) {
        JsonNode node = root.get(field);
        if (node == null) {
            return null;
        }
        if (!node.isObject()) {
            throw error(field, "must be an object such as {\"why\": \"...\", \"expect\": {...}}");
        }
        unknownFields(node, TIER_FIELDS, field + ".");
        String why = optionalString(node, "why", field + ".why");
        if (why == null || why.isBlank()) {
            throw error(field + ".why", "is missing: say why the outcome differs under " + tier + " and that the control still holds");
        }
        return new VerifyCase.TierExpect(why, expect(node.get("expect")));
    }

    private Limits limits(JsonNode node) {
        Limits l = Limits.DEFAULTS;
        if (node == null) {
            return l;
        }
        if (!node.isObject()) {
            throw error("limits", "must be an object such as {\"memory\": \"64m\", \"timeout\": 2}");
        }
        unknownFields(node, LIMIT_FIELDS, "limits.");
        for (String f : LIMIT_FIELDS) {
            JsonNode v = node.get(f);
            if (v == null) {
                continue;
            }
            String field = "limits." + f;
            try {
                l = switch (f) {
                    case "timeout" -> l.withTimeout(Duration.ofMillis(Math.round(number(v, field) * 1000)));
                    case "cpus" -> l.withCpus(number(v, field));
                    case "pids" -> l.withPids(integer(v, field));
                    case "open-files" -> l.withOpenFiles(integer(v, field));
                    case "memory" -> l.withMemoryBytes(size(v, field));
                    case "output-limit" -> l.withOutputBytes(size(v, field));
                    case "file-size" -> l.withFileSizeBytes(size(v, field));
                    case "disk" -> l.withDiskBytes(size(v, field));
                    default -> throw new IllegalStateException(f);
                };
            } catch (AirlockException e) {
                if (e.getMessage().startsWith("case file ")) {
                    throw e;
                }
                throw error(field, e.getMessage());
            }
        }
        return l;
    }

    private VerifyCase.Expect expect(JsonNode node) {
        if (node == null) {
            throw error("expect", "is missing: say what outcome shows the control held (stdout, endReason, exitCode...)");
        }
        if (!node.isObject()) {
            throw error("expect", "must be an object such as {\"endReason\": \"exited\", \"stdout\": \"...\"}");
        }
        unknownFields(node, EXPECT_FIELDS, "expect.");
        EndReason endReason = null;
        String reasonText = optionalString(node, "endReason", "expect.endReason");
        if (reasonText != null) {
            try {
                endReason = EndReason.valueOf(reasonText.toUpperCase());
            } catch (IllegalArgumentException e) {
                throw error("expect.endReason", "'" + reasonText + "' is not an end reason: use one of "
                        + Arrays.stream(EndReason.values()).map(VerifyCase::label).toList());
            }
        }
        Integer exitCode = node.has("exitCode") ? integer(node.get("exitCode"), "expect.exitCode") : null;
        Boolean truncated = null;
        if (node.has("truncated")) {
            if (!node.get("truncated").isBoolean()) {
                throw error("expect.truncated", "must be true or false");
            }
            truncated = node.get("truncated").asBoolean();
        }
        Long stdoutBytes = null;
        if (node.has("stdoutBytes")) {
            JsonNode v = node.get("stdoutBytes");
            if (!v.isIntegralNumber() || v.asLong() < 0) {
                throw error("expect.stdoutBytes", "must be a whole number of bytes");
            }
            stdoutBytes = v.asLong();
        }
        VerifyCase.Expect e = new VerifyCase.Expect(
                textField(node, "stdout", "expect.stdout"), regex(node, "stdoutRegex"),
                textField(node, "stderr", "expect.stderr"), regex(node, "stderrRegex"),
                endReason, exitCode, truncated, stdoutBytes);
        if (e.isEmpty()) {
            throw error("expect", "is empty: give at least one of " + sorted(EXPECT_FIELDS));
        }
        if (e.stdout() != null && e.stdoutRegex() != null) {
            throw error("expect.stdoutRegex", "give stdout or stdoutRegex, not both");
        }
        if (e.stderr() != null && e.stderrRegex() != null) {
            throw error("expect.stderrRegex", "give stderr or stderrRegex, not both");
        }
        return e;
    }

    private Pattern regex(JsonNode node, String f) {
        String text = textField(node, f, "expect." + f);
        if (text == null) {
            return null;
        }
        try {
            return Pattern.compile(text, Pattern.DOTALL);
        } catch (PatternSyntaxException e) {
            throw error("expect." + f, "is not a valid regular expression: " + e.getDescription());
        }
    }

    private void unknownFields(JsonNode node, Set<String> known, String prefix) {
        Iterator<String> names = node.propertyNames().iterator();
        while (names.hasNext()) {
            String n = names.next();
            if (!known.contains(n)) {
                throw error(prefix + n, "is not a known field: use " + sorted(known));
            }
        }
    }

    private String requiredString(JsonNode root, String f) {
        String s = optionalString(root, f);
        if (s == null || s.isBlank()) {
            throw error(f, "is missing");
        }
        return s;
    }

    private String optionalString(JsonNode node, String f) {
        return optionalString(node, f, f);
    }

    private String optionalString(JsonNode node, String f, String label) {
        JsonNode v = node.get(f);
        if (v == null) {
            return null;
        }
        if (!v.isString()) {
            throw error(label, "must be a string");
        }
        return v.asString();
    }

    private String requiredText(JsonNode root, String f) {
        String s = optionalText(root, f);
        if (s == null || s.isBlank()) {
            throw error(f, "is missing: give the program as a string or as an array of lines");
        }
        return s;
    }

    private String optionalText(JsonNode root, String f) {
        return textField(root, f, f);
    }

    /** A string, or an array of strings taken as lines (each ends with a newline). */
    private String textField(JsonNode node, String f, String label) {
        JsonNode v = node.get(f);
        if (v == null) {
            return null;
        }
        if (v.isString()) {
            return v.asString();
        }
        if (v.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (JsonNode line : v) {
                if (!line.isString()) {
                    throw error(label, "must be a string or an array of strings (lines); an element is " + line.getNodeType());
                }
                sb.append(line.asString()).append('\n');
            }
            return sb.toString();
        }
        throw error(label, "must be a string or an array of strings (lines)");
    }

    private double number(JsonNode v, String label) {
        if (!v.isNumber()) {
            throw error(label, "must be a number");
        }
        return v.asDouble();
    }

    private int integer(JsonNode v, String label) {
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw error(label, "must be a whole number");
        }
        return v.asInt();
    }

    private long size(JsonNode v, String label) {
        if (v.isIntegralNumber()) {
            return v.asLong();
        }
        if (!v.isString()) {
            throw error(label, "must be a size such as \"64m\" or a number of bytes");
        }
        try {
            return Limits.parseSize(label, v.asString());
        } catch (AirlockException e) {
            throw error(label, e.getMessage());
        }
    }

    private static String sorted(Set<String> s) {
        return s.stream().sorted().collect(Collectors.joining(", "));
    }

    private AirlockException error(String field, String problem) {
        return AirlockException.invalid("case file " + file + (field == null ? "" : ": field '" + field + "'") + " " + problem);
    }

    static List<String> names(List<VerifyCase> cases) {
        List<String> names = new ArrayList<>();
        cases.forEach(c -> names.add(c.name()));
        return names;
    }
}
