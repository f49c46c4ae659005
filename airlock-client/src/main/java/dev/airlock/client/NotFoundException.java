package dev.airlock.client;

/** HTTP 404 {@code not_found}: the sandbox, process or file does not exist (a sandbox may have expired or been deleted). */
public final class NotFoundException extends AirlockException {

    private static final long serialVersionUID = 1L;

    NotFoundException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
