package dev.airlock.client;

/**
 * The Airlock server could not be reached, or the connection broke before it answered. The
 * message names the URL; usually {@code bin/airlock serve} is not running or listens elsewhere.
 */
public final class AirlockConnectionException extends AirlockException {

    private static final long serialVersionUID = 1L;

    AirlockConnectionException(String message, Throwable cause) {
        super("connection", message, cause);
    }
}
