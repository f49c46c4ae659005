package dev.airlock.client;

/** HTTP 401 {@code unauthenticated}: no token or a wrong one; the token is in {@code <data dir>/token} on the server host. */
public final class UnauthorizedException extends AirlockException {

    private static final long serialVersionUID = 1L;

    UnauthorizedException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
