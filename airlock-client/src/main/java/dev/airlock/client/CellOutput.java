package dev.airlock.client;

import java.util.Base64;
import java.util.Map;

/**
 * One rich output of a cell, as Jupyter gives it: a MIME bundle, the same value in several
 * formats. {@code image/png} and {@code image/jpeg} are base64 on the wire and decoded by
 * {@link #png()}; {@code application/json} is its JSON text.
 *
 * @param kind {@code result} for the value of the cell's last expression, {@code display} for
 *             anything shown with display() or a figure
 * @param data MIME type to value
 */
public record CellOutput(String kind, Map<String, String> data) {

    public CellOutput {
        data = Map.copyOf(data);
    }

    /** Whether this is the value of the cell's last expression. */
    public boolean isResult() {
        return "result".equals(kind);
    }

    /** The {@code text/plain} form, or null. */
    public String text() {
        return data.get("text/plain");
    }

    /** The {@code text/html} form (a pandas DataFrame's table), or null. */
    public String html() {
        return data.get("text/html");
    }

    /** The {@code image/png} form decoded (a matplotlib figure), or null. */
    public byte[] png() {
        String b64 = data.get("image/png");
        return b64 == null ? null : Base64.getMimeDecoder().decode(b64);
    }

    /** The value of {@code mimeType} as sent, or null. */
    public String get(String mimeType) {
        return data.get(mimeType);
    }
}
