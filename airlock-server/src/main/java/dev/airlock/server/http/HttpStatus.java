package dev.airlock.server.http;

import dev.airlock.core.AirlockException.Kind;

/** The HTTP status every door answers a refusal of each kind with. */
public final class HttpStatus {

    private HttpStatus() {
    }

    public static int of(Kind kind) {
        return switch (kind) {
            case INVALID_ARGUMENT -> 400;
            case NOT_FOUND -> 404;
            case CONFLICT -> 409;
            case PERMISSION_DENIED -> 403;
            case LIMIT_EXCEEDED -> 429;
            case TOO_LARGE -> 413;
            case GONE -> 410;
            case UNAVAILABLE -> 503;
            case INTERNAL -> 500;
        };
    }
}
