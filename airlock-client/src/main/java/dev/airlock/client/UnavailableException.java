package dev.airlock.client;

/** HTTP 503 {@code unavailable}: the host cannot provide a control right now (runtime missing, shutting down). */
public final class UnavailableException extends AirlockException {

    private static final long serialVersionUID = 1L;

    UnavailableException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
