package dev.airlock.client;

/**
 * The calling thread was interrupted while it waited for the server. The request was abandoned
 * (an abandoned exec's process is killed by the server) and the thread's interrupt flag is set
 * again, so that the caller's own cancellation logic still sees it.
 */
public final class AirlockInterruptedException extends AirlockException {

    private static final long serialVersionUID = 1L;

    AirlockInterruptedException(String message, Throwable cause) {
        super("interrupted", message, cause);
    }
}
