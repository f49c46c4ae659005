package dev.airlock.core;

import java.nio.charset.StandardCharsets;

/**
 * A one-shot run: code in a language, run once in a fresh sandbox that is destroyed afterwards.
 *
 * @param stdin bytes fed to the program's standard input (may be empty)
 */
public record RunRequest(Language language, String code, byte[] stdin, SandboxSpec spec) {

    /** Code travels to the sandbox in one agent frame (at most 1 MiB with its path). */
    public static final int MAX_CODE_BYTES = 1000 * 1000;

    public RunRequest {
        if (language == null) {
            throw AirlockException.invalid("language is missing: choose one of " + Language.names());
        }
        if (code == null) {
            throw AirlockException.invalid("code is missing: give the program text to run");
        }
        if (code.getBytes(StandardCharsets.UTF_8).length > MAX_CODE_BYTES) {
            throw new AirlockException(AirlockException.Kind.LIMIT_EXCEEDED,
                    "code is larger than " + MAX_CODE_BYTES + " bytes: split the program, or place large parts as files in a long-lived sandbox");
        }
        stdin = stdin == null ? new byte[0] : stdin;
        spec = spec == null ? SandboxSpec.defaults() : spec;
    }

    public static RunRequest of(Language language, String code) {
        return new RunRequest(language, code, null, null);
    }
}
