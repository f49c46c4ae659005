package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EndReason;
import dev.airlock.core.Engine;
import dev.airlock.core.ExecResult;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.OutputListener;
import dev.airlock.core.Printable;
import dev.airlock.core.RunRequest;
import dev.airlock.core.RunResult;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.Trace;
import dev.airlock.server.policy.TokenFile;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.json.JsonFactory;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
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

    @Option(names = "--server", description = "Run on the Airlock server at --url (a running 'airlock serve', whose warm sandboxes"
            + " take the code: this command makes none), as the client whose token --token-file holds. That client's profile sets"
            + " the image and the limits, so --image, --env, the limits but --timeout and the engine's options are refused with it;"
            + " the output comes when the run ends.")
    boolean onServer;

    @Mixin
    ServerConnection server = new ServerConnection();

    @Spec
    CommandSpec command;

    @Override
    public Integer call() {
        Trace.mark("command line parsed");
        checkOptionsForWhereItRuns();
        Language lang = Language.parse(language);
        String code = readCode();
        byte[] stdin = readStdin();
        if (onServer) {
            return runOnServer(lang, code, stdin);
        }
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
        return exitStatus(r.endReason(), r.exitCode());
    }

    private static int exitStatus(EndReason reason, int exitCode) {
        return switch (reason) {
            case TIMED_OUT -> EXIT_TIMED_OUT;
            case CANCELLED -> EXIT_CANCELLED;
            default -> exitCode;
        };
    }

    /**
     * Refuses the options that do not apply where the code runs: on a server, those that set up a
     * sandbox here (the server's policy does); here, those that name a server.
     */
    private void checkOptionsForWhereItRuns() {
        ParseResult parsed = command.commandLine().getParseResult();
        List<String> given = new ArrayList<>();
        if (onServer) {
            List<OptionSpec> local = new ArrayList<>(command.mixins().get("limits").options());
            local.addAll(command.mixins().get("engineOptions").options());
            local.add(command.findOption("--image"));
            local.add(command.findOption("--env"));
            for (OptionSpec o : local) {
                if (parsed.hasMatchedOption(o) && !o.longestName().equals("--timeout")) {
                    given.add(o.longestName());
                }
            }
            if (!given.isEmpty()) {
                throw AirlockException.invalid("with --server the server makes the sandbox, as its policy's profile for the client says,"
                        + " so these options do not apply: " + String.join(", ", given) + "; leave them out, or run here without --server");
            }
            return;
        }
        for (OptionSpec o : command.mixins().get("server").options()) {
            if (parsed.hasMatchedOption(o)) {
                given.add(o.longestName());
            }
        }
        if (!given.isEmpty()) {
            throw AirlockException.invalid("these options name the server that --server runs on: " + String.join(", ", given)
                    + "; give --server too, or leave them out to run here");
        }
    }

    /**
     * Appends {@code text} as a JSON string (RFC 8259: the quotation mark, the reverse solidus and the
     * control characters escaped). Written here rather than with Jackson: the first use of a mapper
     * costs a one-shot about 25 ms, more than the rest of its request.
     */
    private static StringBuilder jsonString(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"');
    }

    /**
     * POST /v1/run to the server, over {@link PlainHttp}: a JVM that loaded the JDK's HttpClient for
     * this one call would spend longer on that than the server on the run. The output is printed once
     * the run ended (the server answers a run whole); Ctrl-C ends this process, its connection with
     * it, and the server then cancels the run.
     */
    private int runOnServer(Language lang, String code, byte[] stdin) {
        limits.apply(Limits.DEFAULTS);   // checks --timeout
        StringBuilder body = new StringBuilder(code.length() + 64).append("{\"language\":");
        jsonString(body, lang.id()).append(",\"code\":");
        jsonString(body, code);
        if (stdin.length > 0) {
            body.append(",\"stdinBase64\":\"").append(Base64.getEncoder().encodeToString(stdin)).append('"');
        }
        if (limits.timeoutSeconds != null) {
            body.append(",\"timeoutSeconds\":").append(limits.timeoutSeconds);
        }
        body.append('}');
        URI url = server.server();
        String token = TokenFile.read(server.tokenFile);
        // the run's answer comes when it ends: a read waits for its timeout (the server's longest when none is given) and a margin
        double waitSeconds = (limits.timeoutSeconds != null ? limits.timeoutSeconds : Limits.MAX_TIMEOUT.toSeconds()) + 60;
        PlainHttp.Response answer;
        try (PlainHttp http = new PlainHttp(url, token, server.tls(url), (int) Math.min(Integer.MAX_VALUE, waitSeconds * 1000))) {
            answer = http.send("POST", "/v1/run", body.toString());
        } catch (java.io.IOException e) {
            throw server.unreachable(e);
        }
        if (answer.status() >= 300) {
            throw ServerConnection.refused(answer.status(), ServerConnection.parse(answer.body()));
        }
        ServerRun run = ServerRun.parse(answer.body(), url);
        // as UTF-8 bytes, as the program wrote them, whatever this process's locale (a PrintStream would encode by it)
        if (json) {
            System.out.writeBytes((answer.body() + "\n").getBytes(StandardCharsets.UTF_8));
            System.out.flush();
        } else {
            System.out.writeBytes(run.stdout().getBytes(StandardCharsets.UTF_8));
            System.out.flush();
            System.err.writeBytes(run.stderr().getBytes(StandardCharsets.UTF_8));
            System.err.flush();
            if (run.endReason() != EndReason.EXITED && run.endReason() != EndReason.SIGNALED) {
                System.err.println("airlock: " + Printable.of(run.message() != null ? run.message()
                        : run.endReason().name().toLowerCase(Locale.ROOT), 1000));
            }
            if (run.truncated()) {
                System.err.println("airlock: output was truncated at the output limit of the client's profile");
            }
        }
        return exitStatus(run.endReason(), run.exitCode());
    }

    /**
     * The fields of a server's run answer that the CLI shows, read with Jackson's streaming parser:
     * a JsonMapper's making and first use cost a one-shot about 30 ms (its configuration, its date
     * formats), more than the rest of the call.
     */
    record ServerRun(String stdout, String stderr, int exitCode, EndReason endReason, String message, boolean truncated) {

        static ServerRun parse(String answer, URI server) {
            String stdout = "";
            String stderr = "";
            String message = null;
            String endReason = null;
            int exitCode = -1;
            boolean truncated = false;
            try (JsonParser p = JsonFactory.builder().build().createParser(ObjectReadContext.empty(), answer)) {
                if (p.nextToken() != JsonToken.START_OBJECT) {
                    throw new IllegalArgumentException("not a JSON object");
                }
                while (p.nextToken() == JsonToken.PROPERTY_NAME) {
                    String name = p.currentName();
                    JsonToken value = p.nextToken();
                    switch (name) {
                        case "stdout" -> stdout = p.getValueAsString("");
                        case "stderr" -> stderr = p.getValueAsString("");
                        case "message" -> message = p.getValueAsString();
                        case "endReason" -> endReason = p.getValueAsString();
                        case "exitCode" -> exitCode = p.getValueAsInt(-1);
                        case "truncated" -> truncated = value == JsonToken.VALUE_TRUE;
                        default -> p.skipChildren();
                    }
                }
                return new ServerRun(stdout, stderr, exitCode, EndReason.valueOf(String.valueOf(endReason).toUpperCase(Locale.ROOT)),
                        message, truncated);
            } catch (JacksonException | IllegalArgumentException e) {
                throw AirlockException.internal("the server at " + server + " answered a run with what is not a run's result ("
                        + e.getMessage() + "): " + Printable.of(answer, 200), e);
            }
        }
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
