package dev.airlock.core;

/**
 * A refusal or failure a user can act on. The message says what was refused or what failed and
 * what to change; {@link #kind()} says which class of problem it is, so that every interface (CLI
 * exit status, HTTP status, MCP error) can translate it the same way.
 */
public class AirlockException extends RuntimeException {

    /** Closed set of failure classes; interfaces map each to one status. */
    public enum Kind {
        /** The request itself is wrong: fix the input. */
        INVALID_ARGUMENT,
        /** A named thing does not exist. */
        NOT_FOUND,
        /** The thing exists but is in the wrong state for the request. */
        CONFLICT,
        /** The caller's policy does not grant this: the message names the rule that refused. */
        PERMISSION_DENIED,
        /** A configured limit or quota refused the request. */
        LIMIT_EXCEEDED,
        /** A body, upload or file is larger than its limit. */
        TOO_LARGE,
        /** The thing existed but is lost: the node of a cluster that held it is down or gone. */
        GONE,
        /** This host cannot provide a required control (runtime missing, no user namespaces...). */
        UNAVAILABLE,
        /** A bug or an unexpected host failure. */
        INTERNAL
    }

    private final Kind kind;

    public AirlockException(Kind kind, String message) {
        super(message);
        this.kind = kind;
    }

    public AirlockException(Kind kind, String message, Throwable cause) {
        super(message, cause);
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }

    public static AirlockException invalid(String message) {
        return new AirlockException(Kind.INVALID_ARGUMENT, message);
    }

    public static AirlockException unavailable(String message) {
        return new AirlockException(Kind.UNAVAILABLE, message);
    }

    public static AirlockException internal(String message, Throwable cause) {
        return new AirlockException(Kind.INTERNAL, message, cause);
    }
}
