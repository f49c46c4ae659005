package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.OutputListener;
import dev.airlock.core.RunRequest;
import dev.airlock.core.RunResult;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.Trace;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code airlock run}: one program, one fresh sandbox, destroyed afterwards. */
@Command(name = "run", mixinStandardHelpOptions = true,
        description = "Run code once in a fresh sandbox and print its output; exits with the program's exit code.")
final class RunCommand implements Callable<Integer> {

    /** Exit status when the run hit its time limit, as timeout(1) does. */
    static final int EXIT_TIMED_OUT = 124;
    static final int EXIT_CANCELLED = 130;

    @Option(names = "--lang", required = true, paramLabel = "LANG",
            description = "python, javascript, bash, sh or java.")
    String language;

    static final class Source {
        @Option(names = "--code", paramLabel = "CODE", description = "The program text.")
        String code;

        @Option(names = "--file", paramLabel = "PATH", description = "A file holding the program text.")
        Path file;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Source source;

    static final class Input {
        @Option(names = "--stdin", paramLabel = "TEXT", description = "Text fed to the program's standard input.")
        String text;

        @Option(names = "--stdin-file", paramLabel = "PATH", description = "A file fed to standard input ('-': this command's own).")
        String file;
    }

    @ArgGroup(exclusive = true)
    Input input;

    @Option(names = "--env", paramLabel = "NAME=VALUE", description = "An environment variable for the program (repeatable).")
    List<String> env = List.of();

    @Option(names = "--image", paramLabel = "NAME", description = "The image the sandbox starts from: 'system' (default, the host's"
            + " /usr) or one of 'airlock image ls'.")
    String image = SandboxSpec.SYSTEM_IMAGE;

    @Option(names = "--json", description = "Print one JSON object with the output and how the run ended, instead of streaming.")
    boolean json;

    @Mixin
    LimitOptions limits = new LimitOptions();

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Override
    public Integer call() {
        Trace.mark("command line parsed");
        Language lang = Language.parse(language);
        String code = readCode();
        byte[] stdin = readStdin();
        SandboxSpec spec = new SandboxSpec(image, limits.apply(Limits.DEFAULTS), parseEnv());
        RunRequest request = new RunRequest(lang, code, stdin, spec);

        PrintStream out = System.out;
        PrintStream err = System.err;
        OutputListener listener = json ? OutputListener.NONE : new OutputListener() {
            @Override
            public void stdout(byte[] chunk) {
                out.write(chunk, 0, chunk.length);
                out.flush();
            }

            @Override
            public void stderr(byte[] chunk) {
                err.write(chunk, 0, chunk.length);
                err.flush();
            }
        };
        try (Engine engine = engineOptions.open(0, spec)) {
            Trace.mark("engine open");
            RunResult run = engine.run(request, listener);
            ExecResult r = run.result();
            if (json) {
                out.println(toJson(run));
            } else if (r.endReason() != EndReason.EXITED && r.endReason() != EndReason.SIGNALED) {
                err.println("airlock: " + r.message());
            }
            if (r.truncated() && !json) {
                err.println("airlock: output was truncated at " + Limits.formatBytes(spec.limits().outputBytes()) + " per stream");
            }
            return exitStatus(r);
        } finally {
            Trace.mark("engine closed");
        }
    }

    static int exitStatus(ExecResult r) {
        return switch (r.endReason()) {
            case TIMED_OUT -> EXIT_TIMED_OUT;
            case CANCELLED -> EXIT_CANCELLED;
            default -> r.exitCode();
        };
    }

    static String toJson(RunResult run) {
        ExecResult r = run.result();
        ObjectNode node = JsonMapper.builder().build().createObjectNode();
        node.put("stdout", r.stdoutText());
        node.put("stderr", r.stderrText());
        node.put("exitCode", r.exitCode());
        node.put("endReason", r.endReason().name().toLowerCase());
        node.put("timedOut", r.timedOut());
        node.put("oomKilled", r.oomKilled());
        node.put("truncated", r.truncated());
        node.put("durationMs", r.duration().toMillis());
        node.put("sandboxId", run.sandboxId().value());
        if (r.message() != null) {
            node.put("message", r.message());
        }
        return node.toString();
    }

    private String readCode() {
        if (source.code != null) {
            return source.code;
        }
        try {
            return Files.readString(source.file, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            throw AirlockException.invalid("file " + source.file + " does not exist: give the path of the program to run");
        } catch (IOException e) {
            throw AirlockException.invalid("cannot read " + source.file + ": " + e.getMessage());
        }
    }

    private byte[] readStdin() {
        if (input == null) {
            return new byte[0];
        }
        if (input.text != null) {
            return input.text.getBytes(StandardCharsets.UTF_8);
        }
        try {
            return input.file.equals("-") ? System.in.readAllBytes() : Files.readAllBytes(Path.of(input.file));
        } catch (NoSuchFileException e) {
            throw AirlockException.invalid("stdin file " + input.file + " does not exist");
        } catch (IOException e) {
            throw AirlockException.invalid("cannot read stdin file " + input.file + ": " + e.getMessage());
        }
    }

    private Map<String, String> parseEnv() {
        Map<String, String> map = new LinkedHashMap<>();
        for (String entry : env) {
            int eq = entry.indexOf('=');
            if (eq <= 0) {
                throw AirlockException.invalid("--env '" + entry + "' is not NAME=VALUE");
            }
            map.put(entry.substring(0, eq), entry.substring(eq + 1));
        }
        return map;
    }
}
