package dev.airlock.egress;

import dev.airlock.core.Printable;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** The proxy's own HTTP answers to the sandbox: a tunnel established, or a refusal naming its rule. */
final class HttpAnswers {

    static final byte[] CONNECTION_ESTABLISHED = "HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);

    private HttpAnswers() {
    }

    /** A complete response that ends the connection; {@code rule} goes in {@code X-Airlock-Rule}, printable. */
    static byte[] error(int status, String rule, String message) {
        String reason = switch (status) {
            case 400 -> "Bad Request";
            case 403 -> "Forbidden";
            case 405 -> "Method Not Allowed";
            case 429 -> "Too Many Requests";
            case 502 -> "Bad Gateway";
            case 504 -> "Gateway Timeout";
            default -> "Error";
        };
        String body = "airlock egress: " + (status == 403 ? "blocked by rule '" + rule + "': " : "") + message + "\n";
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        String head = "HTTP/1.1 " + status + " " + reason + "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + b.length
                + "\r\nConnection: close\r\nX-Airlock-Rule: " + Printable.of(rule) + "\r\n\r\n";
        byte[] h = head.getBytes(StandardCharsets.ISO_8859_1);
        byte[] all = Arrays.copyOf(h, h.length + b.length);
        System.arraycopy(b, 0, all, h.length, b.length);
        return all;
    }

    static byte[] error(EgressRefusal r) {
        return error(r.httpStatus, r.rule, r.getMessage());
    }
}
