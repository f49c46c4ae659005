package dev.airlock.client;

import java.time.Duration;
import java.util.List;

/**
 * What one cell run with {@link Interpreter#run} gave back. A cell that raised or was interrupted
 * is a normal result, not an exception: check {@link #status()} (or {@link #ok()}) and
 * {@link #error()}.
 *
 * @param status         {@code ok}; {@code error} (the cell raised: see {@link #error()});
 *                       {@code timeout} or {@code interrupted} (a KeyboardInterrupt stopped it, the
 *                       context keeps its state); {@code dead} (the kernel died: {@link Interpreter#restart()})
 * @param executionCount the kernel's number for this cell, or null
 * @param outputs        the value of the last expression and every display, in order
 * @param truncated      outputs over the sandbox's output limit were dropped
 * @param message        why it ended as it did, or null
 */
public record CellResult(String context, String status, Integer executionCount, String stdout, String stderr,
                         List<CellOutput> outputs, Error error, boolean truncated, Duration duration, String message) {

    public CellResult {
        outputs = List.copyOf(outputs);
    }

    /** What a cell raised: the exception's name, its value and the traceback's lines. */
    public record Error(String name, String value, List<String> traceback) {
        public Error {
            traceback = List.copyOf(traceback);
        }
    }

    /** Whether the cell ran to its end without raising. */
    public boolean ok() {
        return "ok".equals(status);
    }

    /** The value of the last expression, or null when the cell ended in a statement. */
    public CellOutput result() {
        return outputs.stream().filter(CellOutput::isResult).findFirst().orElse(null);
    }

    /** The {@code text/plain} form of the last expression's value ({@code "42"} for {@code x + 1}), or null. */
    public String text() {
        CellOutput r = result();
        return r == null ? null : r.text();
    }

    /** The first {@code text/html} output (a DataFrame as a table), or null. */
    public String html() {
        return outputs.stream().map(CellOutput::html).filter(h -> h != null).findFirst().orElse(null);
    }

    /** The first PNG image (a matplotlib figure), decoded, or null. */
    public byte[] png() {
        return outputs.stream().map(CellOutput::png).filter(p -> p != null).findFirst().orElse(null);
    }

    /** Every PNG image, decoded, in order. */
    public List<byte[]> pngs() {
        return outputs.stream().map(CellOutput::png).filter(p -> p != null).toList();
    }
}
