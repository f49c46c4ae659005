package dev.airlock.client;

/** HTTP 413 {@code too_large}: a request body, upload or download is over its limit, such as the sandboxs {@code fileSize}. */
public final class PayloadTooLargeException extends AirlockException {

    private static final long serialVersionUID = 1L;

    PayloadTooLargeException(int status, String code, String message, String control, String rule) {
        super(status, code, message, control, rule);
    }
}
