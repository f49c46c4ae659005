package dev.airlock.client;

/** HTTP 400 {@code invalid_argument}: the request was malformed or a value was out of range; fix the request, retrying will not help. */
public final class BadRequestException extends AirlockException {

    private static final long serialVersionUID = 1L;

    BadRequestException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
