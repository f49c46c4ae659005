package dev.airlock.it;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * README code that a test runs stays the code the test runs. A block in README.md preceded by
 * {@code <!-- snippet: PATH NAME -->} must equal, line for line, the region of PATH (relative to
 * the repository) between {@code // README snippet: NAME (begin)} and {@code (end)}, less the
 * region's common indentation. Changing one without the other fails here.
 */
class ReadmeSnippetTest {

    private static final Path REPOSITORY = Path.of("..").toAbsolutePath().normalize();
    private static final Pattern MARKER = Pattern.compile("<!-- snippet: (\\S+) (\\S+) -->\\R```\\w*\\R(.*?\\R)```",
            Pattern.DOTALL);

    record Snippet(Path source, String name, String readmeCode) {
    }

    @Test
    void theReadmesLangChain4jBlockIsTheCodeLangChain4jReadmeTestRuns() throws IOException {
        List<Snippet> snippets = snippets(Files.readString(REPOSITORY.resolve("README.md")));
        assertThat(snippets).extracting(Snippet::name).as("README blocks marked as compiled snippets").contains("LangChain4j");
        assertThat(snippets).extracting(s -> REPOSITORY.relativize(s.source()).toString())
                .contains("airlock-it/src/test/java/dev/airlock/it/LangChain4jReadmeTest.java");
        for (Snippet s : snippets) {
            assertThat(s.readmeCode())
                    .as("README.md's block '%s' against %s: change both together", s.name(), REPOSITORY.relativize(s.source()))
                    .isEqualTo(region(Files.readString(s.source()), s.name()));
        }
    }

    @Test
    void aRegionIsComparedWithoutItsIndentationAndWithEveryLineKept() {
        String source = """
                class X {
                    // README snippet: S (begin)
                    int a() {
                        return 1;
                    }

                    // README snippet: S (end)
                }
                """;
        assertThat(region(source, "S")).isEqualTo("int a() {\n    return 1;\n}\n");
    }

    static List<Snippet> snippets(String readme) {
        List<Snippet> found = new ArrayList<>();
        Matcher m = MARKER.matcher(readme);
        while (m.find()) {
            found.add(new Snippet(REPOSITORY.resolve(m.group(1)).normalize(), m.group(2), m.group(3)));
        }
        return found;
    }

    /** The lines between the markers of {@code name}, less their common indentation, trailing blank lines dropped. */
    static String region(String source, String name) {
        String begin = "// README snippet: " + name + " (begin)";
        String end = "// README snippet: " + name + " (end)";
        List<String> lines = source.lines().toList();
        int from = -1;
        int to = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).strip().equals(begin)) {
                from = i + 1;
            } else if (lines.get(i).strip().equals(end)) {
                to = i;
            }
        }
        assertThat(from).as("the marker '%s'", begin).isPositive();
        assertThat(to).as("the marker '%s' after '%s'", end, begin).isGreaterThanOrEqualTo(from);
        List<String> region = new ArrayList<>(lines.subList(from, to));
        while (!region.isEmpty() && region.getLast().isBlank()) {
            region.removeLast();
        }
        int indent = region.stream().filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
        StringBuilder code = new StringBuilder();
        for (String line : region) {
            code.append(line.isBlank() ? "" : line.substring(indent)).append('\n');
        }
        return code.toString();
    }
}
