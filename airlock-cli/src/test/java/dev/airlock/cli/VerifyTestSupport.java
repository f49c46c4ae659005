package dev.airlock.cli;

import dev.airlock.cli.verify.Catalogue;
import dev.airlock.cli.verify.VerifyCase;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** Runs {@code airlock verify --json} as a user does and reads its report. */
final class VerifyTestSupport {

    private VerifyTestSupport() {
    }

    record Report(int exitCode, JsonNode json, String stderr) {

        /** Case name to status (held, broken, error). */
        Map<String, String> statuses() {
            Map<String, String> m = new TreeMap<>();
            json.get("findings").forEach(f -> m.put(f.get("name").asString(), f.get("status").asString()));
            return m;
        }

        Set<String> withStatus(String status) {
            return statuses().entrySet().stream().filter(e -> e.getValue().equals(status)).map(Map.Entry::getKey)
                    .collect(Collectors.toCollection(TreeSet::new));
        }

        JsonNode finding(String name) {
            for (JsonNode f : json.get("findings")) {
                if (f.get("name").asString().equals(name)) {
                    return f;
                }
            }
            throw new AssertionError("no finding " + name + " in " + json);
        }
    }

    static Report verify(String... args) throws Exception {
        return verify(CliProcess.DEFAULT_LIMIT, args);
    }

    /** {@link #verify(String...)} for a run that may take up to {@code limit} (all cases under a slower tier). */
    static Report verify(java.time.Duration limit, String... args) throws Exception {
        String[] all = new String[args.length + 2];
        all[0] = "verify";
        all[1] = "--json";
        System.arraycopy(args, 0, all, 2, args.length);
        CliProcess cli = CliProcess.run(limit, all);
        assertThat(cli.stdout()).as("stderr: %s", cli.stderr()).startsWith("{");
        return new Report(cli.exitCode(), JsonMapper.builder().build().readTree(cli.stdout()), cli.stderr());
    }

    /** Names of the built-in cases that attack {@code control}. */
    static Set<String> builtInCasesOf(String control) {
        return Catalogue.builtIn().stream().filter(c -> c.control().equals(control)).map(VerifyCase::name)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    static Set<String> builtInNames() {
        return Catalogue.builtIn().stream().map(VerifyCase::name).collect(Collectors.toCollection(TreeSet::new));
    }
}
