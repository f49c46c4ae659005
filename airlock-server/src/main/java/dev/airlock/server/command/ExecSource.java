package dev.airlock.server.command;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Language;

import java.util.List;

/**
 * What an execution runs: a command (argv), or code in a language. The rule "a command, or a
 * language with code, never both" is written here once; each door only reads the three fields
 * from its wire format (REST: an array; MCP: an array or a shell line) and hands them over.
 */
public sealed interface ExecSource {

    /** A program and its arguments, run as given. */
    record Command(List<String> argv) implements ExecSource {
        public Command {
            argv = List.copyOf(argv);
            if (argv.isEmpty()) {
                throw AirlockException.invalid("'command' is empty: give the program and its arguments, such as [\"ls\", \"-la\"]");
            }
        }
    }

    /**
     * Code for an interpreter.
     *
     * @param language null: the sandbox's default language (refused where the sandbox has none)
     */
    record Code(Language language, String code) implements ExecSource {
        public Code {
            if (code == null) {
                throw AirlockException.invalid("'code' is missing: give the program text with its 'language'");
            }
        }
    }

    /**
     * The source a request names. {@code command} null: not given; {@code language} is parsed here,
     * so every door refuses an unknown language the same way.
     */
    static ExecSource of(List<String> command, String language, String code) {
        if (command != null) {
            if (language != null || code != null) {
                throw AirlockException.invalid("give either 'command' or 'language' with 'code', not both");
            }
            return new Command(command);
        }
        if (code != null) {
            return new Code(language == null ? null : Language.parse(language), code);
        }
        throw AirlockException.invalid("give 'command' (the program and its arguments, such as [\"python3\", \"script.py\"]), "
                + "or 'language' and 'code'");
    }

    /** The message when code names no language and the sandbox has no default one. */
    static String missingLanguage() {
        return "'code' needs a 'language' (" + Language.names() + "), or a sandbox created with a default language";
    }
}
