package dev.airlock.client;

/** HTTP 500 {@code internal}, any other unexpected status, or an answer this client cannot read: a server bug or a proxy in the way. */
public final class ServerException extends AirlockException {

    private static final long serialVersionUID = 1L;

    ServerException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
