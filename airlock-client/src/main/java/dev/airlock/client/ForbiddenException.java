package dev.airlock.client;

/** HTTP 403 {@code forbidden}: the server's policy does not grant this client the operation, profile or limit asked for; the message names the rule. */
public final class ForbiddenException extends AirlockException {

    private static final long serialVersionUID = 1L;

    ForbiddenException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
