package dev.airlock.client;

/**
 * Something the Airlock server refused or could not do, or the server could not be reached.
 * Unchecked, so that sandbox code reads like the task; catch a subclass when you can act on the
 * cause ({@link NotFoundException}, {@link QuotaExceededException}, ...).
 *
 * <p>{@link #code()} is the server's stable error code ({@code not_found}, {@code too_large}, ...)
 * and {@link #status()} its HTTP status; both are suitable for programmatic checks. The message is
 * the server's sentence, cleaned of control characters and cut to a few hundred characters.
 *
 * <p>When one of the server's controls refused the request (its policy, a quota, an approval),
 * {@link #control()} and {@link #rule()} name it, such as {@code profile} and
 * {@code profiles.default.maxLimits}, and the message ends with
 * {@code [refused by <control>: <rule>]}: the same words the server's MCP door and audit log use,
 * so whoever prints the exception sees what refused and what to change in the policy.
 */
public class AirlockException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final int status;
    private final String code;
    private final String serverMessage;
    private final String control;
    private final String rule;

    /** An error answer; {@code control} and {@code rule} are null unless the server named them. */
    AirlockException(int status, String code, String serverMessage, String control, String rule) {
        super(describe(status, code, serverMessage, control, rule));
        this.status = status;
        this.code = code;
        this.serverMessage = serverMessage;
        this.control = control;
        this.rule = rule;
    }

    /** A failure on this side (configuration, connection, interruption): there is no answer. */
    AirlockException(String code, String message, Throwable cause) {
        super(message, cause);
        this.status = 0;
        this.code = code;
        this.serverMessage = message;
        this.control = null;
        this.rule = null;
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

    /**
     * The server's control that refused the request, such as {@code grant}, {@code profile} or
     * {@code quota}; null when the server named none (the failure was not a refusal, or an older
     * server answered). Already sanitized and capped.
     */
    public String control() {
        return control;
    }

    /**
     * The rule of the server's policy (or the server flag) that refused the request, such as
     * {@code profiles.default.maxLimits} or {@code clients.agent.quotas.sandboxes}; null when the
     * server named none. Already sanitized and capped.
     */
    public String rule() {
        return rule;
    }

    private static String describe(int status, String code, String message, String control, String rule) {
        String refusedBy = control == null ? "" : " [refused by " + control + (rule == null ? "" : ": " + rule) + "]";
        return message + " (HTTP " + status + " " + code + ")" + refusedBy;
    }
}
