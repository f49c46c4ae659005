package dev.airlock.core;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * One process to start inside a running sandbox.
 *
 * @param argv    program and arguments; the program is looked up on the sandbox's PATH
 * @param env     variables added to the sandbox's environment for this process
 * @param cwd     working directory inside the sandbox
 * @param stdin   bytes fed to standard input, then closed (empty: stdin is closed at once)
 * @param timeout wall-clock budget; {@code null} takes the sandbox's limit
 * @param tty     non-null: the command runs on a new pseudo-terminal of this size, its stdin,
 *                stdout and stderr all the terminal (so its output is one stream, stdout);
 *                {@code null}: on pipes
 */
public record ExecRequest(List<String> argv, Map<String, String> env, String cwd, byte[] stdin, Duration timeout, TerminalSize tty) {

    public static final String DEFAULT_CWD = "/workspace";
    public static final int MAX_STDIN_BYTES = 16 * 1024 * 1024;

    public ExecRequest {
        if (argv == null || argv.isEmpty() || argv.getFirst() == null || argv.getFirst().isEmpty()) {
            throw AirlockException.invalid("command is empty: give the program to run and its arguments");
        }
        for (int i = 0; i < argv.size(); i++) {
            if (argv.get(i) == null) {
                throw AirlockException.invalid("command argument " + i + " is null: give every argument as a string");
            }
        }
        argv = List.copyOf(argv);
        for (String a : argv) {
            if (a.indexOf('\0') >= 0) {
                throw AirlockException.invalid("command argument contains a NUL byte");
            }
        }
        env = env == null ? Map.of() : Map.copyOf(env);
        SandboxSpec.validateEnv(env);
        if (cwd == null || cwd.isEmpty()) {
            cwd = DEFAULT_CWD;
        }
        if (!cwd.startsWith("/") || cwd.indexOf('\0') >= 0) {
            throw AirlockException.invalid("working directory '" + Printable.of(cwd) + "' must be an absolute path inside the sandbox");
        }
        stdin = stdin == null ? new byte[0] : stdin;
        if (stdin.length > MAX_STDIN_BYTES) {
            throw new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED,
                    "stdin is " + stdin.length + " bytes, over the limit of " + MAX_STDIN_BYTES + ": write large inputs as files instead");
        }
        if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
            throw AirlockException.invalid("timeout must be positive");
        }
    }

    /** A request on pipes, without a terminal. */
    public ExecRequest(List<String> argv, Map<String, String> env, String cwd, byte[] stdin, Duration timeout) {
        this(argv, env, cwd, stdin, timeout, null);
    }

    public static ExecRequest of(String... argv) {
        return new ExecRequest(List.of(argv), Map.of(), DEFAULT_CWD, null, null);
    }

    public ExecRequest withStdin(byte[] bytes) {
        return new ExecRequest(argv, env, cwd, bytes, timeout, tty);
    }

    public ExecRequest withTimeout(Duration t) {
        return new ExecRequest(argv, env, cwd, stdin, t, tty);
    }

    public ExecRequest withCwd(String dir) {
        return new ExecRequest(argv, env, dir, stdin, timeout, tty);
    }

    public ExecRequest withEnv(Map<String, String> e) {
        return new ExecRequest(argv, e, cwd, stdin, timeout, tty);
    }

    /** The same request on a pseudo-terminal of {@code size} (null: on pipes). */
    public ExecRequest withTty(TerminalSize size) {
        return new ExecRequest(argv, env, cwd, stdin, timeout, size);
    }
}
