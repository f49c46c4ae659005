package dev.airlock.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * One one-shot run for {@link Airlock#run(Run)}: source code in a {@link Language}, plus optional
 * stdin, text files placed in the sandbox before the code starts, and a timeout. The server
 * creates a sandbox for it, runs the code, returns what it left in {@code /workspace/output} and
 * destroys the sandbox ({@code POST /v1/run}). Immutable; each setter returns a copy, as
 * {@link Exec}'s do:
 *
 * <pre>{@code
 * airlock.run(Run.code(Language.PYTHON, "print(open('data.csv').read())")
 *         .file("data.csv", "a,b\n1,2\n")
 *         .timeout(Duration.ofSeconds(10)));
 * }</pre>
 *
 * @param language the language of {@code code}
 * @param code     source code to run
 * @param stdin    bytes fed to standard input; empty for none
 * @param files    path to text placed before the code starts; a relative path is under
 *                 {@code /workspace}
 * @param timeout  wall-clock budget of the code; null for the server's default (30 s)
 */
public record Run(
        Language language,
        String code,
        byte[] stdin,
        Map<String, String> files,
        Duration timeout) {

    public Run {
        Objects.requireNonNull(language, "language");
        Objects.requireNonNull(code, "code");
        stdin = stdin == null ? new byte[0] : stdin.clone();
        Map<String, String> copy = new LinkedHashMap<>();
        if (files != null) {
            files.forEach((path, text) -> {
                if (path == null || path.isEmpty()) {
                    throw new IllegalArgumentException("a file path is empty: give one such as data.csv or /workspace/data.csv");
                }
                copy.put(path, Objects.requireNonNull(text, () -> "the content of file " + Errors.sanitize(path, 80) + " is null"));
            });
        }
        files = Collections.unmodifiableMap(copy);
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("timeout " + timeout + " must be positive");
        }
    }

    /** Runs source code with the language's interpreter. */
    public static Run code(Language language, String code) {
        return new Run(language, code, null, null, null);
    }

    /** Feeds {@code text}, encoded as UTF-8, to standard input. */
    public Run stdin(String text) {
        return stdin(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Feeds {@code bytes} to standard input; binary is fine. */
    public Run stdin(byte[] bytes) {
        return new Run(language, code, Objects.requireNonNull(bytes, "stdin"), files, timeout);
    }

    /** Places a text file (UTF-8) at {@code path}, absolute or relative to {@code /workspace}, replacing one of the same path. */
    public Run file(String path, String text) {
        Map<String, String> f = new LinkedHashMap<>(files);
        f.put(Objects.requireNonNull(path, "path"), Objects.requireNonNull(text, "text"));
        return new Run(language, code, stdin, f, timeout);
    }

    /** Places text files, as {@link #file(String, String)} does each. */
    public Run files(Map<String, String> more) {
        Map<String, String> f = new LinkedHashMap<>(files);
        f.putAll(more);
        return new Run(language, code, stdin, f, timeout);
    }

    /** The wall-clock budget of the code, instead of the server's default. */
    public Run timeout(Duration limit) {
        return new Run(language, code, stdin, files, Objects.requireNonNull(limit, "timeout"));
    }

    /** A copy of the stdin bytes. */
    @Override
    public byte[] stdin() {
        return stdin.clone();
    }

    byte[] stdinBytes() {
        return stdin;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Run r
                && language == r.language && code.equals(r.code) && Arrays.equals(stdin, r.stdin)
                && files.equals(r.files) && Objects.equals(timeout, r.timeout);
    }

    @Override
    public int hashCode() {
        return Objects.hash(language, code, Arrays.hashCode(stdin), files, timeout);
    }

    @Override
    public String toString() {
        return "Run[language=" + language.id() + ", code=" + code.length() + " chars, files=" + files.keySet()
                + ", stdin=" + stdin.length + " bytes" + (timeout != null ? ", timeout=" + timeout : "") + "]";
    }
}
