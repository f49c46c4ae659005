package dev.airlock.client;

/** HTTP 409 {@code conflict}: the target is in the wrong state (sandbox being destroyed, file exists, directory not empty). */
public final class ConflictException extends AirlockException {

    private static final long serialVersionUID = 1L;

    ConflictException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
