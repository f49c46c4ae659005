package dev.airlock.client;

/** HTTP 429 {@code quota_exceeded}: too many sandboxes or running processes; close some, or retry later. */
public final class QuotaExceededException extends AirlockException {

    private static final long serialVersionUID = 1L;

    QuotaExceededException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
