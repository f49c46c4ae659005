package dev.airlock.client;

import tools.jackson.databind.JsonNode;

import java.nio.charset.StandardCharsets;

/**
 * Turns an HTTP error answer into the typed exception for its status. The server's text is
 * untrusted: control characters are replaced and it is cut to {@link #MAX_MESSAGE} characters
 * before it reaches an exception message; so are the names of the control and rule that refused,
 * to {@link #MAX_CONTROL} and {@link #MAX_RULE}.
 */
final class Errors {

    static final int MAX_MESSAGE = 500;
    static final int MAX_CODE = 40;
    static final int MAX_CONTROL = 40;
    static final int MAX_RULE = 200;

    private Errors() {
    }

    /**
     * @param status the HTTP status
     * @param body   at most a few KiB of the answer's body
     * @param what   the request, such as {@code GET /v1/sandboxes/x}, named when the body is unreadable
     */
    static AirlockException fromResponse(int status, byte[] body, String what) {
        JsonNode error = null;
        try {
            error = Json.MAPPER.readTree(body).path("error");
        } catch (RuntimeException notJson) {
            // fall through: described below
        }
        String code = string(error, "code");
        String message = string(error, "message");
        if (code == null || message == null) {
            String text = new String(body, StandardCharsets.UTF_8).strip();
            message = what + " answered HTTP " + status + " without an Airlock error body"
                    + (text.isEmpty() ? "" : ": " + sanitize(text, 200));
            code = code == null ? defaultCode(status) : code;
        }
        return forStatus(status, code, message, name(error, "control"), name(error, "rule"));
    }

    /**
     * Maps the error object of an NDJSON {@code error} line ({@code code}, {@code message} and,
     * for a refusal, {@code control} and {@code rule}), where there is no status of its own.
     */
    static AirlockException fromStreamError(JsonNode error) {
        String code = string(error, "code");
        String message = string(error, "message");
        int status = switch (code == null ? "" : code) {
            case "invalid_argument" -> 400;
            case "unauthenticated" -> 401;
            case "forbidden" -> 403;
            case "not_found" -> 404;
            case "conflict" -> 409;
            case "too_large" -> 413;
            case "quota_exceeded" -> 429;
            case "unavailable" -> 503;
            default -> 500;
        };
        return forStatus(status, code == null ? "internal" : code,
                message == null ? "the server reported an error without a message" : message,
                name(error, "control"), name(error, "rule"));
    }

    /** The exception for {@code status}; sanitizes and caps every text the server sent. */
    static AirlockException forStatus(int status, String code, String message, String control, String rule) {
        code = sanitize(code, MAX_CODE);
        message = sanitize(message, MAX_MESSAGE);
        control = sanitize(control, MAX_CONTROL);
        rule = sanitize(rule, MAX_RULE);
        return switch (status) {
            case 400 -> new BadRequestException(status, code, message, control, rule);
            case 401 -> new UnauthorizedException(status, code, message, control, rule);
            case 403 -> new ForbiddenException(status, code, message, control, rule);
            case 404 -> new NotFoundException(status, code, message, control, rule);
            case 409 -> new ConflictException(status, code, message, control, rule);
            case 413 -> new PayloadTooLargeException(status, code, message, control, rule);
            case 429 -> new QuotaExceededException(status, code, message, control, rule);
            case 503 -> new UnavailableException(status, code, message, control, rule);
            default -> new ServerException(status, code, message, control, rule);
        };
    }

    /** The text field {@code name} of {@code error}; null when it is missing or not text. */
    private static String string(JsonNode error, String name) {
        return error != null && error.path(name).isString() ? error.path(name).stringValue() : null;
    }

    /** Like {@link #string}, and null when empty too: a refusal's {@code control} or {@code rule}, which names something or nothing. */
    private static String name(JsonNode error, String field) {
        String s = string(error, field);
        return s == null || s.isEmpty() ? null : s;
    }

    /** The answer was 2xx but not what the contract promises. */
    static ServerException unreadable(int status, String what, String problem) {
        return new ServerException(status, "invalid_response", sanitize(what + " answered something this client cannot read: " + problem, MAX_MESSAGE),
                null, null);
    }

    private static String defaultCode(int status) {
        return switch (status) {
            case 400 -> "invalid_argument";
            case 401 -> "unauthenticated";
            case 403 -> "forbidden";
            case 404 -> "not_found";
            case 409 -> "conflict";
            case 413 -> "too_large";
            case 429 -> "quota_exceeded";
            case 503 -> "unavailable";
            default -> "internal";
        };
    }

    /**
     * Replaces control and format characters and cuts {@code s} to {@code max} characters. The SDK's own
     * counterpart of airlock-core's Printable: the SDK depends on no other Airlock module and compiles to Java 17.
     */
    static String sanitize(String s, int max) {
        if (s == null) {
            return null;
        }
        int limit = Math.min(s.length(), max);
        StringBuilder b = new StringBuilder(limit + 1);
        for (int i = 0; i < limit; i++) {
            char c = s.charAt(i);
            int type = Character.getType(c);
            boolean unsafe = Character.isISOControl(c) || type == Character.FORMAT
                    || type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR
                    || (Character.isSurrogate(c) && !validSurrogateAt(s, i, limit));
            b.append(unsafe ? (c == '\n' || c == '\t' ? ' ' : '?') : c);
        }
        if (s.length() > max) {
            b.append('…');
        }
        return b.toString();
    }

    private static boolean validSurrogateAt(String s, int i, int limit) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < limit && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
