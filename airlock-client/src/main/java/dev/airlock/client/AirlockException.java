package dev.airlock.client;

/**
 * Something the Airlock server refused or could not do, or the server could not be reached.
 * Unchecked, so that sandbox code reads like the task; catch a subclass when you can act on the
 * cause ({@link NotFoundException}, {@link QuotaExceededException}, ...).
 *
 * <p>{@link #code()} is the server's stable error code ({@code not_found}, {@code too_large}, ...)
 * and {@link #status()} its HTTP status; both are suitable for programmatic checks. The message is
 * the server's sentence, cleaned of control characters and cut to a few hundred characters.
 */
public class AirlockException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int status;
    private final String code;
    private final String serverMessage;

    AirlockException(int status, String code, String serverMessage) {
        this(status, code, serverMessage, null);
    }

    AirlockException(int status, String code, String serverMessage, Throwable cause) {
        super(describe(status, code, serverMessage), cause);
        this.status = status;
        this.code = code;
        this.serverMessage = serverMessage;
    }

    /** A failure on this side (configuration, connection, interruption): there is no answer. */
    AirlockException(String code, String message, Throwable cause) {
        super(message, cause);
        this.status = 0;
        this.code = code;
        this.serverMessage = message;
    }

    /** The HTTP status the server answered with; 0 when there was no answer. */
    public int status() {
        return status;
    }

    /** The server's stable error code, such as {@code not_found}; {@code connection}, {@code interrupted} or
     * {@code client} when there was no answer. */
    public String code() {
        return code;
    }

    /** The server's sentence alone, without status and code; already sanitized and capped. */
    public String serverMessage() {
        return serverMessage;
    }

    private static String describe(int status, String code, String message) {
        return message + " (HTTP " + status + " " + code + ")";
    }
}
