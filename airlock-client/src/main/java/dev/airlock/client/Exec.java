package dev.airlock.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One execution to run in a sandbox: either a command line or source code in a {@link Language},
 * plus optional working directory, environment, stdin and timeout. Immutable; each setter returns
 * a copy, so a base {@code Exec} can be shared:
 *
 * <pre>{@code
 * sandbox.exec(Exec.command("sh", "-c", "sort").stdin("b\na\n").timeout(Duration.ofSeconds(5)));
 * sandbox.exec(Exec.code(Language.PYTHON, "print(1)"));
 * }</pre>
 *
 * @param command  the program and its arguments; null when {@code language} is set
 * @param language the language of {@code code}; null when {@code command} is set
 * @param code     source code to run; null when {@code command} is set
 * @param cwd      working directory in the sandbox; null for the server's default
 * @param env      variables added to the sandbox's environment
 * @param stdin    bytes fed to standard input; empty for none
 * @param timeout  wall-clock budget; null for the sandbox's limit
 */
public record Exec(
        List<String> command,
        Language language,
        String code,
        String cwd,
        Map<String, String> env,
        byte[] stdin,
        Duration timeout) {

    public Exec {
        if (command != null) {
            if (language != null || code != null) {
                throw new IllegalArgumentException("give either a command or language and code, not both");
            }
            command = List.copyOf(command);
            if (command.isEmpty()) {
                throw new IllegalArgumentException("command is empty: give the program and its arguments, such as [\"ls\", \"-l\"]");
            }
        } else if (language == null || code == null) {
            throw new IllegalArgumentException("give a command, or a language and its code");
        }
        if (cwd != null && !cwd.startsWith("/")) {
            throw new IllegalArgumentException("cwd '" + Errors.sanitize(cwd, 80) + "' must be an absolute path in the sandbox, such as /workspace");
        }
        env = SandboxSpec.copyEnv(env);
        stdin = stdin == null ? new byte[0] : stdin.clone();
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw new IllegalArgumentException("timeout " + timeout + " must be positive");
        }
    }

    /** Runs {@code program} with {@code args}; no shell is involved. */
    public static Exec command(String program, String... args) {
        Objects.requireNonNull(program, "program");
        String[] all = new String[args.length + 1];
        all[0] = program;
        System.arraycopy(args, 0, all, 1, args.length);
        return new Exec(List.of(all), null, null, null, null, null, null);
    }

    /** Runs the command line {@code argv}; no shell is involved. */
    public static Exec command(List<String> argv) {
        return new Exec(argv, null, null, null, null, null, null);
    }

    /** Runs source code with the language's interpreter. */
    public static Exec code(Language language, String code) {
        return new Exec(null, Objects.requireNonNull(language, "language"), Objects.requireNonNull(code, "code"),
                null, null, null, null);
    }

    public Exec cwd(String dir) {
        return new Exec(command, language, code, dir, env, stdin, timeout);
    }

    /** Adds one environment variable (replacing one of the same name). */
    public Exec env(String name, String value) {
        Map<String, String> e = new LinkedHashMap<>(env);
        e.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
        return new Exec(command, language, code, cwd, e, stdin, timeout);
    }

    /** Adds environment variables. */
    public Exec env(Map<String, String> vars) {
        Map<String, String> e = new LinkedHashMap<>(env);
        e.putAll(vars);
        return new Exec(command, language, code, cwd, e, stdin, timeout);
    }

    /** Feeds {@code text}, encoded as UTF-8, to standard input. */
    public Exec stdin(String text) {
        return stdin(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Feeds {@code bytes} to standard input; binary is fine. */
    public Exec stdin(byte[] bytes) {
        return new Exec(command, language, code, cwd, env, Objects.requireNonNull(bytes, "stdin"), timeout);
    }

    /** The wall-clock budget of this execution, instead of the sandbox's. */
    public Exec timeout(Duration limit) {
        return new Exec(command, language, code, cwd, env, stdin, Objects.requireNonNull(limit, "timeout"));
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
        return o instanceof Exec e
                && Objects.equals(command, e.command) && language == e.language && Objects.equals(code, e.code)
                && Objects.equals(cwd, e.cwd) && env.equals(e.env) && Arrays.equals(stdin, e.stdin)
                && Objects.equals(timeout, e.timeout);
    }

    @Override
    public int hashCode() {
        return Objects.hash(command, language, code, cwd, env, Arrays.hashCode(stdin), timeout);
    }

    @Override
    public String toString() {
        String what = command != null ? "command=" + command : "language=" + language.id() + ", code=" + code.length() + " chars";
        return "Exec[" + what + (cwd != null ? ", cwd=" + cwd : "") + ", env=" + env.keySet()
                + ", stdin=" + stdin.length + " bytes" + (timeout != null ? ", timeout=" + timeout : "") + "]";
    }
}
