package dev.airlock.server.rest;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Language;
import dev.airlock.core.Limits;
import dev.airlock.core.RunRequest;
import dev.airlock.core.SandboxSpec;
import dev.airlock.core.TerminalSize;
import dev.airlock.server.command.Command;
import dev.airlock.server.command.ExecSource;
import dev.airlock.server.wire.Json;
import dev.airlock.server.wire.LimitChanges;
import dev.airlock.server.wire.LimitField;
import dev.airlock.server.wire.NetworkJson;
import tools.jackson.databind.JsonNode;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The REST API's JSON bodies read into commands: every field checked for its type and range,
 * unknown fields refused, with a message that names the field and what to send instead.
 */
final class RestCommands {

    static final Set<String> CREATE_FIELDS = Set.of("profile", "image", "language", "limits", "env", "labels", "ttlSeconds",
            "idleTimeoutSeconds", "network");
    static final Set<String> LIMIT_FIELDS = Set.copyOf(LimitField.wireNames());
    static final Set<String> EXEC_FIELDS = Set.of("command", "language", "code", "cwd", "env", "stdin", "stdinBase64", "timeoutSeconds",
            "background", "tty", "rows", "cols");
    static final Set<String> CELL_FIELDS = Set.of("code", "timeoutSeconds");
    static final Set<String> RUN_FIELDS = Set.of("language", "code", "stdin", "stdinBase64", "files", "timeoutSeconds");

    private final Duration maxTtl;

    RestCommands(Duration maxTtl) {
        this.maxTtl = maxTtl;
    }

    Command.Create create(JsonNode body) {
        JsonNode l = body.get("limits");
        JsonNode ln = l == null || l.isNull() ? null : Json.parseObject(l.toString().getBytes(StandardCharsets.UTF_8), LIMIT_FIELDS);
        LimitChanges changes = ln == null ? LimitChanges.NONE : limits(ln);
        JsonNode network = body.get("network");
        Map<String, String> env = Json.stringMap(body, "env");
        SandboxSpec.validateEnv(env);
        Double ttlSeconds = Json.number(body, "ttlSeconds");
        Double idleSeconds = Json.number(body, "idleTimeoutSeconds");
        String language = Json.string(body, "language");
        return new Command.Create(Json.string(body, "profile"), Json.string(body, "image"), changes::applyTo, env,
                network == null || network.isNull() ? null : NetworkJson.parse(network), Json.stringMap(body, "labels"),
                ttlSeconds == null ? null : ttl(ttlSeconds), idleSeconds == null ? null : seconds("idleTimeoutSeconds", idleSeconds, maxTtl),
                language == null ? null : Language.parse(language));
    }

    /** The limits a create body changes, each value read as its kind says. */
    private static LimitChanges limits(JsonNode n) {
        return LimitChanges.read(n::has, f -> switch (f.kind()) {
            case SIZE -> Json.size(n, f.wireName());
            case SECONDS -> {
                Double seconds = Json.number(n, f.wireName());
                yield seconds == null ? null : seconds("limits." + f.wireName(), seconds, Limits.MAX_TIMEOUT).toMillis() / 1000.0;
            }
            case COUNT, DECIMAL -> Json.number(n, f.wireName());
        });
    }

    /** A lifetime: required, above 0, at most the server's maximum. */
    Duration ttl(Double seconds) {
        if (seconds == null) {
            throw AirlockException.invalid("field 'ttlSeconds' is required");
        }
        return seconds("ttlSeconds", seconds, maxTtl);
    }

    private static Duration seconds(String field, double value, Duration max) {
        if (Double.isNaN(value) || value <= 0 || value > max.toSeconds()) {
            throw AirlockException.invalid("field '" + field + "' is " + value + ": give more than 0 and at most " + max.toSeconds() + " seconds");
        }
        return Duration.ofMillis(Math.round(value * 1000));
    }

    /** What an exec body runs. */
    static ExecSource source(JsonNode body) {
        JsonNode command = body.get("command");
        List<String> argv = null;
        if (command != null && !command.isNull()) {
            if (!command.isArray() || command.isEmpty()) {
                throw AirlockException.invalid("field 'command' must be a non-empty array of strings, such as [\"python3\", \"-c\", \"print(1)\"]");
            }
            argv = new ArrayList<>();
            for (JsonNode a : command) {
                if (!a.isString()) {
                    throw AirlockException.invalid("field 'command' must hold only strings");
                }
                argv.add(a.asString());
            }
        }
        return ExecSource.of(argv, Json.string(body, "language"), Json.string(body, "code"));
    }

    /** How an exec body runs: environment, directory, input, timeout and terminal. */
    static Command.ExecOptions options(JsonNode body) {
        return new Command.ExecOptions(Json.stringMap(body, "env"), Json.string(body, "cwd"), stdin(body), timeout(body), tty(body));
    }

    /**
     * The terminal an exec body asks for: {@code "tty": true} with optional {@code rows} and
     * {@code cols} (1 to 1000; 24 x 80 unless given), only with {@code "background": true}.
     */
    private static TerminalSize tty(JsonNode body) {
        Double rows = Json.number(body, "rows");
        Double cols = Json.number(body, "cols");
        if (!Json.bool(body, "tty")) {
            if (rows != null || cols != null) {
                throw AirlockException.invalid("fields 'rows' and 'cols' size a terminal: give them with \"tty\": true");
            }
            return null;
        }
        if (!Json.bool(body, "background")) {
            throw AirlockException.invalid("\"tty\": true needs \"background\": true: a process on a terminal runs in the background;"
                    + " attach to it with a WebSocket at GET /v1/sandboxes/{id}/processes/{pid}/attach");
        }
        return new TerminalSize(size("rows", rows, TerminalSize.DEFAULT.rows()), size("cols", cols, TerminalSize.DEFAULT.cols()));
    }

    private static int size(String field, Double value, int otherwise) {
        if (value == null) {
            return otherwise;
        }
        if (value != Math.rint(value) || value < 1 || value > TerminalSize.MAX) {
            throw AirlockException.invalid("field '" + field + "' is " + value + ": give a whole number from 1 to " + TerminalSize.MAX);
        }
        return value.intValue();
    }

    static Duration timeout(JsonNode body) {
        Double timeout = Json.number(body, "timeoutSeconds");
        return timeout == null ? null : seconds("timeoutSeconds", timeout, Limits.MAX_TIMEOUT);
    }

    private static byte[] stdin(JsonNode body) {
        String stdin = Json.string(body, "stdin");
        String stdinBase64 = Json.string(body, "stdinBase64");
        if (stdin != null && stdinBase64 != null) {
            throw AirlockException.invalid("give 'stdin' or 'stdinBase64', not both");
        }
        try {
            return stdinBase64 != null ? Base64.getDecoder().decode(stdinBase64) : stdin != null ? stdin.getBytes(StandardCharsets.UTF_8) : null;
        } catch (IllegalArgumentException e) {
            throw AirlockException.invalid("field 'stdinBase64' is not valid base64");
        }
    }

    /** A one-shot run: language and code, optional input and files (path to text). */
    static Command.Run run(JsonNode body) {
        String language = Json.string(body, "language");
        String code = Json.string(body, "code");
        if (language == null || code == null) {
            throw AirlockException.invalid("a run needs 'language' (" + Language.names() + ") and 'code', such as"
                    + " {\"language\": \"python\", \"code\": \"print(1)\"}");
        }
        if (code.getBytes(StandardCharsets.UTF_8).length > RunRequest.MAX_CODE_BYTES) {
            throw AirlockException.invalid("field 'code' is larger than " + RunRequest.MAX_CODE_BYTES
                    + " bytes: place large parts with 'files' and import them, or split the program");
        }
        Map<String, byte[]> files = new LinkedHashMap<>();
        Json.stringMap(body, "files").forEach((path, text) -> files.put(path, text.getBytes(StandardCharsets.UTF_8)));
        return new Command.Run(Language.parse(language), code, stdin(body), files, timeout(body),
                Map.of("airlock.rest", "run"), null);
    }
}
